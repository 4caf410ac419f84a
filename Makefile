# gpuleak: `make` builds build/libgpuleak.so and build/gpuleak; `make test`
# runs every test (what .ci/run calls); `make demo` runs the embedded demo.
CUDA_HOME ?= /usr/local/cuda
CC ?= cc
PYTHON ?= python3
BUILD := build

WARN := -Wall -Wextra
CFLAGS ?= -O2 -g
# The shim's floors, bottom first (docs/architecture.md): a module includes
# only its own floor's and those below (scripts/house.py checks).
SHIM_FLOORS := base stacks count names python reports entry
ALL_CFLAGS = $(CFLAGS) $(WARN) -std=gnu11 -fPIC -pthread -I$(CUDA_HOME)/include \
          -I/usr/include/x86_64-linux-gnu $(addprefix -Ishim/,$(SHIM_FLOORS)) -Icommon -Iinclude
# Link-time optimization: an event's path crosses a dozen files, and their
# small functions inlined into it take fewer of the caches' lines, which a
# Python program's own code then keeps (docs/performance.md). Fat objects:
# the unit tests link them without it (-fno-lto), as their --wrap of a
# call between two files needs.
SHIM_CFLAGS = $(ALL_CFLAGS) -fvisibility=hidden -fno-omit-frame-pointer -flto=auto -ffat-lto-objects
SHIM_LIBS := $(EXTRA_LDFLAGS) -lunwind -ldl -lpthread
PYTHON_CONFIG ?= $(PYTHON)-config

SHIM_SRC := $(wildcard shim/*/*.c)
SHIM_H := $(wildcard shim/*/*.h)
# common/: what the shim and the command share (the report format, the
# origin rules), built into both.
COMMON_SRC := $(wildcard common/*.c)
COMMON_H := $(wildcard common/*.h)
# embedded_py.S carries shim/python/holders.py and layout.py into the
# library (search.c runs them).
SHIM_OBJ := $(patsubst shim/%.c,$(BUILD)/shim/%.o,$(SHIM_SRC)) \
            $(patsubst common/%.c,$(BUILD)/shim/common/%.o,$(COMMON_SRC)) $(BUILD)/shim/python/embedded_py.o
# Objects that interpose on the process (dlsym, cu*, exit) stay out of unit tests.
DOOR_OBJ := $(addprefix $(BUILD)/shim/entry/,interpose.o wrappers.o exits.o)
CORE_OBJ := $(filter-out $(DOOR_OBJ),$(SHIM_OBJ))

# The command: its commands (cli/) over the report reader (report/), which
# includes only common/.
CLI_SRC := $(wildcard cli/*.c)
REPORT_SRC := $(wildcard report/*.c)
REPORT_OBJ := $(patsubst report/%.c,$(BUILD)/report/%.o,$(REPORT_SRC))
CLI_OBJ := $(patsubst cli/%.c,$(BUILD)/cli/%.o,$(CLI_SRC)) $(REPORT_OBJ) \
           $(patsubst common/%.c,$(BUILD)/cli/%.o,$(COMMON_SRC)) $(BUILD)/cli/html_assets.o
# What `gpuleak html` writes into its pages, built into the binary.
HTML_ASSETS := $(wildcard cli/html/*) $(wildcard third_party/js/*/*.js third_party/js/*/*.css)

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

PROG_SRC := $(wildcard tests/integration/prog_*.c)
PROG_BIN := $(patsubst tests/integration/%.c,$(BUILD)/tests/%,$(PROG_SRC))

FAKECUDA := $(BUILD)/fakecuda/libcuda.so.1
# A fake CUDA runtime over it (tests/fakecuda/fakecudart.c), for programs
# written against cudaMalloc and nvcc's launches.
FAKECUDART := $(BUILD)/fakecuda/libcudart.so.13
# A fake of PyTorch's libc10_cuda.so (tests/fakecuda/fake_c10_cuda.cpp) and
# a stripped copy, for the tensor events' tests.
CXX ?= c++
FAKEC10 := $(BUILD)/fakec10/libc10_cuda.so
FAKEC10_STRIPPED := $(BUILD)/fakec10-stripped/libc10_cuda.so
FAKEC10_OTHER := $(BUILD)/fakec10-other/libc10_cuda.so
# The native frame of JAX's and CuPy's fake pools (tests/fakecuda/fake_pool_native.c),
# at paths like the real modules'.
FAKEPOOLS := $(BUILD)/fakepools/jaxlib/xla.fake.so $(BUILD)/fakepools/cupy/cuda/memory.fake.so

.PHONY: all test unit integration integration-parallel integration-alone sanitize demo bench deps clean install cli-test fuzz man litter-before

all: $(BUILD)/libgpuleak.so $(FAKECUDA) $(FAKECUDART) $(FAKEC10) $(BUILD)/gpuleak $(BUILD)/gpuleak.1

$(BUILD)/shim/common/%.o: common/%.c $(COMMON_H)
	@mkdir -p $(@D)
	$(CC) $(SHIM_CFLAGS) -c $< -o $@

$(BUILD)/shim/%.o: shim/%.c $(SHIM_H) $(COMMON_H)
	@mkdir -p $(@D)
	$(CC) $(SHIM_CFLAGS) -c $< -o $@

$(BUILD)/shim/python/embedded_py.o: shim/python/embedded_py.S $(wildcard shim/python/*.py)
	@mkdir -p $(@D)
	$(CC) -c $< -o $@

$(BUILD)/libgpuleak.so: $(SHIM_OBJ)
	$(CC) $(CFLAGS) -flto=auto -shared -o $@ $^ $(SHIM_LIBS) -Wl,-rpath,'$$ORIGIN/deps'

$(BUILD)/cli/%.o: cli/%.c $(wildcard cli/*.h report/*.h) $(COMMON_H) | $(BUILD)/cli
	$(CC) $(ALL_CFLAGS) -iquote report -c $< -o $@

$(BUILD)/report/%.o: report/%.c $(wildcard report/*.h) $(COMMON_H) | $(BUILD)/report
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/cli/%.o: common/%.c $(COMMON_H) | $(BUILD)/cli
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/cli/html_assets.o: cli/html_assets.S $(HTML_ASSETS) | $(BUILD)/cli
	$(CC) -c $< -o $@

$(BUILD)/gpuleak: $(CLI_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ -ljansson

# The manual page, written by the command from the tables its parser reads.
man: $(BUILD)/gpuleak.1
$(BUILD)/gpuleak.1: $(BUILD)/gpuleak
	$< help --man >$@.tmp && mv $@.tmp $@

$(FAKECUDA): tests/fakecuda/fakecuda.c common/report_format.h | $(BUILD)/fakecuda
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ $< -lpthread
	ln -sf libcuda.so.1 $(BUILD)/fakecuda/libcuda.so

$(FAKECUDART): tests/fakecuda/fakecudart.c tests/fakecuda/fakecudart.map $(FAKECUDA)
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,libcudart.so.13 \
	    -Wl,--version-script=tests/fakecuda/fakecudart.map -o $@ $< -L$(BUILD)/fakecuda -lcuda
	ln -sf libcudart.so.13 $(BUILD)/fakecuda/libcudart.so

# The fake, and another build of it at -O0 (other offsets, another build
# id): a library replaced on disk while a program runs.
$(FAKEC10): FAKEC10_OPT := -O1
$(FAKEC10_OTHER): FAKEC10_OPT := -O0
$(FAKEC10) $(FAKEC10_OTHER): tests/fakecuda/fake_c10_cuda.cpp $(FAKECUDA)
	@mkdir -p $(@D)
	$(CXX) $(FAKEC10_OPT) -g -std=c++17 $(WARN) -fPIC -shared -fvisibility=hidden \
	    -I$(CUDA_HOME)/include -o $@ $< -L$(BUILD)/fakecuda -lcuda

$(FAKEPOOLS): tests/fakecuda/fake_pool_native.c $(FAKECUDA)
	@mkdir -p $(@D)
	$(CC) -O1 -g $(WARN) -fPIC -shared -fvisibility=hidden -I$(CUDA_HOME)/include -o $@ $< \
	    -L$(BUILD)/fakecuda -lcuda

$(FAKEC10_STRIPPED): $(FAKEC10)
	@mkdir -p $(@D)
	strip --strip-all -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(CORE_OBJ) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -fno-lto -o $@ $< $(CORE_OBJ) -lcheck -lsubunit -lm -lrt $(SHIM_LIBS) $(TEST_LIBS)

# The Python frame reader is tested inside an embedded interpreter.
$(BUILD)/tests/test_python: ALL_CFLAGS += $(shell $(PYTHON_CONFIG) --includes)
$(BUILD)/tests/test_python: TEST_LIBS = $(shell $(PYTHON_CONFIG) --embed --ldflags)

# The report writer's test fails chosen allocations of the shim's objects.
$(BUILD)/tests/test_report: TEST_LIBS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
# real_dl.c's test holds a loader walk open without glibc's lock.
$(BUILD)/tests/test_real_dl: TEST_LIBS = -Wl,--wrap=dl_iterate_phdr
# live.c's test makes a GPU peak at the moment a fold starts its walk.
$(BUILD)/tests/test_live: TEST_LIBS = -Wl,--wrap=counts_each
# growth.c's test moves the thread's CPU clock by a tick, as a virtual
# machine's does.
$(BUILD)/tests/test_growth: TEST_LIBS = -Wl,--wrap=clock_gettime

# Integration programs link the fake driver directly (-lcuda) or dlopen it.
$(BUILD)/tests/prog_%: tests/integration/prog_%.c $(FAKECUDA) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -fno-omit-frame-pointer -O0 -o $@ $< -L$(BUILD)/fakecuda -lcuda -ldl -lpthread

# prog_runtime is written against the runtime API: it links the fake runtime.
$(BUILD)/tests/prog_runtime: tests/integration/prog_runtime.c $(FAKECUDART) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -fno-omit-frame-pointer -O0 -o $@ $< -L$(BUILD)/fakecuda -lcudart \
	    -Wl,-rpath-link,$(BUILD)/fakecuda

# prog_forkdl's own dlopen and dl_iterate_phdr are the ones the shim calls.
$(BUILD)/tests/prog_forkdl: ALL_CFLAGS += -rdynamic

# Another library of the driver's names, and a program linked against it.
STUBCUDA := $(BUILD)/stubcuda/libstubcuda.so
$(STUBCUDA): tests/fakecuda/stubcuda.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -shared -o $@ $<
$(BUILD)/tests/prog_stub: tests/integration/prog_stub.c $(STUBCUDA) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -fno-omit-frame-pointer -O0 -o $@ $< -L$(BUILD)/stubcuda -lstubcuda -ldl \
	    -Wl,-rpath,'$$ORIGIN/../stubcuda'

# A program that embeds Python (its finish is not the program's end).
$(BUILD)/tests/prog_embed: ALL_CFLAGS += $(shell $(PYTHON_CONFIG) --includes)
$(BUILD)/tests/prog_embed: tests/integration/prog_embed.c $(FAKECUDA) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -fno-omit-frame-pointer -O0 -o $@ $< -L$(BUILD)/fakecuda -lcuda -ldl -lpthread \
	    $(shell $(PYTHON_CONFIG) --embed --ldflags)

# prog_symbols without DWARF, the ways a shipped binary comes: built
# without -g; stripped of debug info only (.symtab kept); and with only
# MiniDebugInfo, as Fedora ships it: .symtab's functions that .dynsym lacks,
# in an xz-compressed ELF file in .gnu_debugdata of a fully stripped binary.
SYMBOLS := $(BUILD)/tests/symbols
SYMBOLS_BIN := $(SYMBOLS)/nodebug $(SYMBOLS)/strip-debug $(SYMBOLS)/minidebuginfo
$(SYMBOLS)/nodebug: tests/integration/prog_symbols.c tests/integration/progs.h $(FAKECUDA)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fno-omit-frame-pointer -O0 -g0 -o $@ $< -L$(BUILD)/fakecuda -lcuda
$(SYMBOLS)/strip-debug: $(BUILD)/tests/prog_symbols
	@mkdir -p $(@D)
	strip --strip-debug -o $@ $<
$(SYMBOLS)/minidebuginfo: $(SYMBOLS)/nodebug
	nm -D --defined-only --format=posix $< | cut -d' ' -f1 | sort >$@.dynsyms
	nm --defined-only --format=posix $< | awk '$$2 ~ /^[Tt]$$/ {print $$1}' | sort >$@.funcsyms
	comm -13 $@.dynsyms $@.funcsyms >$@.keep
	objcopy --only-keep-debug $< $@.debug
	objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=$@.keep $@.debug $@.mini
	xz -f $@.mini
	strip --strip-all -R .comment -o $@ $<
	objcopy --add-section .gnu_debugdata=$@.mini.xz $@
	rm -f $@.dynsyms $@.funcsyms $@.keep $@.debug $@.mini.xz

# A program that reaches the driver only by dlopen: no -lcuda.
$(BUILD)/tests/prog_dlopen: tests/integration/prog_dlopen.c tests/integration/progs.h | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -fno-omit-frame-pointer -O0 -o $@ $< -ldl

$(BUILD)/demo: tests/demo/demo.c $(FAKECUDA) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -O1 -fno-omit-frame-pointer -o $@ $< -L$(BUILD)/fakecuda -lcuda

# The demo runs over the real driver when a GPU answers, else the fake one.
demo: deps all $(BUILD)/demo
	@if nvidia-smi -L >/dev/null 2>&1; then echo "demo: running on the GPU"; lib=; \
	else echo "demo: no GPU found; running over the fake driver (tests/fakecuda)"; lib=$(BUILD)/fakecuda; fi; \
	LD_LIBRARY_PATH=$$lib$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH} LD_PRELOAD=$(abspath $(BUILD))/libgpuleak.so \
	GPULEAK_OUTPUT=$(CURDIR)/gpuleak-demo.json $(BUILD)/demo

$(BUILD) $(BUILD)/shim $(BUILD)/fakecuda $(BUILD)/tests $(BUILD)/cli $(BUILD)/report:
	mkdir -p $@

deps:
	@scripts/install-deps.sh

unit: deps $(UNIT_BIN)
	@scripts/in-test-tmp.sh $(TEST_TMP)/unit scripts/run-suites.sh $(JOBS) $(UNIT_BIN)

# The tests' temporary files go to a folder of their own, removed after
# them (scripts/in-test-tmp.sh): nothing stays in /tmp.
TEST_TMP = $(abspath $(BUILD))/test-tmp
# WORKERS at a time, then the tests that judge time one by one
# (tests/integration/conftest.py).
INTEGRATION_BUILD := all $(PROG_BIN) $(SYMBOLS_BIN) $(FAKEC10) $(FAKEC10_STRIPPED) $(FAKEC10_OTHER) \
                     $(STUBCUDA) $(FAKEPOOLS)
integration_pass = scripts/in-test-tmp.sh $(TEST_TMP)/integration-$(1) \
    $(PYTEST) -q -p no:cacheprovider $(2) -m "$(3)" tests/integration
integration: deps
	$(MAKE) --no-print-directory integration-parallel
	$(MAKE) --no-print-directory integration-alone
integration-parallel: deps $(INTEGRATION_BUILD)
	$(call integration_pass,parallel,-n $(WORKERS) --dist loadscope,not alone)
integration-alone: deps $(INTEGRATION_BUILD)
	$(call integration_pass,alone,,alone)

# The unit suites and the gpuleak command again, under AddressSanitizer and
# UndefinedBehaviorSanitizer. The command's tests preload the shim into
# programs built without ASan, so there the shim, the fake driver and the
# demo are the normal build's (linked beside the instrumented command, as
# `gpuleak run` finds the shim beside itself) and only the command is
# instrumented.
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
SAN_CLI := $(BUILD)/sanitize-cli
sanitize: deps
	$(MAKE) --no-print-directory -j$(JOBS) BUILD=$(BUILD)/sanitize CFLAGS="$(SAN_FLAGS)" \
	    $(patsubst $(BUILD)/%,$(BUILD)/sanitize/%,$(UNIT_BIN))
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/unit/lsan.supp:print_suppressions=0 \
	$(MAKE) --no-print-directory BUILD=$(BUILD)/sanitize CFLAGS="$(SAN_FLAGS)" unit
	$(MAKE) --no-print-directory -j$(JOBS) BUILD=$(SAN_CLI) CFLAGS="$(SAN_FLAGS)" $(SAN_CLI)/gpuleak \
	    $(SAN_CLI)/tests/test_cli
	$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/demo
	ln -f $(BUILD)/libgpuleak.so $(BUILD)/demo $(SAN_CLI)/
	rm -rf $(SAN_CLI)/fakecuda && cp -a $(BUILD)/fakecuda $(SAN_CLI)/fakecuda
	$(call cli_tests,$(SAN_CLI),sanitize)

# The report reader's fuzz target, for a bounded time, as part of the tests.
CI_FUZZ_SECONDS ?= 30

# Everything the suites run is built first, JOBS at a time (compiling is
# safe in parallel); the suites then run one after the other, the unit
# suites JOBS at a time and the integration and command tests WORKERS at a
# time (one more than cores: a part of them waits on children, timers,
# node_exporter, Chromium and the demo's steps), but for the integration
# tests that judge time (growth sampling, checkpoints), which run one by
# one, beside the fuzzer alone (one core; its output goes to
# BUILD/fuzz.log). The command's tests run once, against the command built
# under ASan and UBSan (`make sanitize`); `make cli-test` runs them against
# the plain build.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
WORKERS ?= $(shell echo $$(($(JOBS) + 1)))
TEST_BUILD := $(INTEGRATION_BUILD) $(UNIT_BIN) $(BUILD)/demo $(BUILD)/tests/test_cli
test: litter-before deps
	$(MAKE) --no-print-directory -j$(JOBS) $(TEST_BUILD)
	$(MAKE) --no-print-directory unit sanitize integration-parallel
	$(MAKE) --no-print-directory -j2 integration-alone fuzz FUZZ_SECONDS=$(CI_FUZZ_SECONDS) \
	    FUZZ_LOG=$(abspath $(BUILD))/fuzz.log
	@scripts/no-litter.sh $(BUILD)/tmp-before.txt

# What /tmp held before the tests, for no-litter.sh to compare with after.
litter-before: | $(BUILD)
	@ls -d /tmp/gpuleak-* /tmp/gpuleak_* 2>/dev/null | sort >$(BUILD)/tmp-before.txt || true

# The gpuleak command: its Check suite (units, suppressions, the loader),
# then every command end to end, the page and the fuzzer's finds replayed
# (pytest, tests/cli/test_*.py). cli_tests BUILD_DIR,TMP_NAME runs both for
# the command built in BUILD_DIR.
# Debian's python3-pytest and python3-pytest-xdist serve where $(PYTHON)
# has not both.
PYTEST = $(shell for p in $(PYTHON) /usr/bin/python3; do \
                     if $$p -c 'import pytest, xdist' 2>/dev/null; then echo $$p; exit; fi; done; \
                 echo $(PYTHON)) -m pytest
cli_tests = scripts/in-test-tmp.sh $(TEST_TMP)/$(2) sh -c '$(1)/tests/test_cli && \
    GPULEAK_TEST_BUILD=$(1) $(PYTEST) -q -p no:cacheprovider -n $(WORKERS) tests/cli'
CLI_TEST_OBJ := $(REPORT_OBJ) $(addprefix $(BUILD)/cli/,supp.o units.o opts.o frame_text.o \
                origin_rules.o composition.o)
$(BUILD)/tests/test_cli: tests/cli/test_cli.c $(CLI_TEST_OBJ) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -iquote cli -iquote report -o $@ $< $(CLI_TEST_OBJ) \
	    -lcheck -lsubunit -lm -lrt -lpthread -ljansson
cli-test: deps all $(BUILD)/demo $(BUILD)/tests/test_cli
	@$(call cli_tests,$(BUILD),cli)

# Fuzzes the report reader with libFuzzer for FUZZ_SECONDS over tests/cli/corpus
# and tests/cli/fixtures.
FUZZ_SECONDS ?= 60
fuzz: deps
	@FUZZ_LOG=$(FUZZ_LOG) tests/cli/fuzz.sh $(BUILD)/fuzz $(FUZZ_SECONDS)

# CPU benchmarks over the fake driver (tests/bench/run.py, docs/performance.md).
# unwind_probe.c is not a program but an object to preload under PyTorch;
# scripts/gpu-bench.sh builds it there.
# core_speed.c is linked into each program, and built as a library for
# the Python benchmarks.
BENCH_BIN := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(filter-out tests/bench/unwind_probe.c \
             tests/bench/core_speed.c,$(wildcard tests/bench/*.c)))
$(BUILD)/bench/%: tests/bench/%.c tests/bench/core_speed.c tests/bench/core_speed.h $(FAKECUDA)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -o $@ $< \
	    tests/bench/core_speed.c -L$(BUILD)/fakecuda -lcuda -lpthread
$(BUILD)/bench/libcore_speed.so: tests/bench/core_speed.c tests/bench/core_speed.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O1 -shared -o $@ $<
bench: deps all $(BENCH_BIN) $(BUILD)/bench/libcore_speed.so
	$(PYTHON) tests/bench/run.py --build $(BUILD) $(BENCH_ARGS)

PREFIX ?= /usr/local
install: $(BUILD)/gpuleak $(BUILD)/libgpuleak.so $(BUILD)/gpuleak.1
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
	    $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BUILD)/gpuleak $(DESTDIR)$(PREFIX)/bin/gpuleak
	install -m 755 $(BUILD)/libgpuleak.so $(DESTDIR)$(PREFIX)/lib/libgpuleak.so
	install -m 644 include/gpuleak.h $(DESTDIR)$(PREFIX)/include/gpuleak.h
	install -m 644 $(BUILD)/gpuleak.1 $(DESTDIR)$(PREFIX)/share/man/man1/gpuleak.1

clean:
	rm -rf $(BUILD)
