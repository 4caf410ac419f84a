# gpuleak: `make` builds build/libgpuleak.so and build/gpuleak; `make test`
# runs every test (what .ci/run calls); `make demo` runs the embedded demo.
CUDA_HOME ?= /usr/local/cuda
CC ?= cc
PYTHON ?= python3
BUILD := build

WARN := -Wall -Wextra
CFLAGS ?= -O2 -g
CFLAGS += $(WARN) -std=gnu11 -fPIC -pthread -I$(CUDA_HOME)/include \
          -I/usr/include/x86_64-linux-gnu -Ishim
SHIM_CFLAGS := $(CFLAGS) -fvisibility=hidden -fno-omit-frame-pointer
SHIM_LIBS := -lunwind -ldl -lpthread

SHIM_SRC := $(wildcard shim/*.c)
SHIM_OBJ := $(patsubst shim/%.c,$(BUILD)/shim/%.o,$(SHIM_SRC))
# Objects that interpose on the process (dlsym, cu*) stay out of unit tests.
DOOR_OBJ := $(BUILD)/shim/doors.o $(BUILD)/shim/wrappers.o
CORE_OBJ := $(filter-out $(DOOR_OBJ),$(SHIM_OBJ))

CLI_SRC := $(wildcard report/*.c)
CLI_OBJ := $(patsubst report/%.c,$(BUILD)/report/%.o,$(CLI_SRC))

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

PROG_SRC := $(wildcard tests/integration/prog_*.c)
PROG_BIN := $(patsubst tests/integration/%.c,$(BUILD)/tests/%,$(PROG_SRC))

FAKECUDA := $(BUILD)/fakecuda/libcuda.so.1

.PHONY: all test unit integration demo bench deps clean install

all: $(BUILD)/libgpuleak.so $(FAKECUDA)

$(BUILD)/shim/%.o: shim/%.c $(wildcard shim/*.h) | $(BUILD)/shim
	$(CC) $(SHIM_CFLAGS) -c $< -o $@

$(BUILD)/libgpuleak.so: $(SHIM_OBJ)
	$(CC) -shared -o $@ $^ $(SHIM_LIBS) -Wl,-rpath,'$$ORIGIN/deps'

$(FAKECUDA): tests/fakecuda/fakecuda.c | $(BUILD)/fakecuda
	$(CC) $(CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ $< -lpthread
	ln -sf libcuda.so.1 $(BUILD)/fakecuda/libcuda.so

$(BUILD)/tests/test_%: tests/unit/test_%.c $(CORE_OBJ) | $(BUILD)/tests
	$(CC) $(CFLAGS) -o $@ $< $(CORE_OBJ) -lcheck -lsubunit -lm -lrt $(SHIM_LIBS)

# Integration programs link the fake driver directly (-lcuda) or dlopen it.
$(BUILD)/tests/prog_%: tests/integration/prog_%.c $(FAKECUDA) | $(BUILD)/tests
	$(CC) $(CFLAGS) -fno-omit-frame-pointer -O0 -o $@ $< -L$(BUILD)/fakecuda -lcuda -ldl -lpthread

$(BUILD)/shim $(BUILD)/fakecuda $(BUILD)/tests $(BUILD)/report:
	mkdir -p $@

deps:
	@scripts/install-deps.sh

unit: deps $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

integration: deps all $(PROG_BIN)
	$(PYTHON) -m unittest discover -s tests/integration -p 'test_*.py' -v

test: unit integration

clean:
	rm -rf $(BUILD)
