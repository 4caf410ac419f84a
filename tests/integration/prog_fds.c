/* prog_fds: the process state a program can see, under the shim as
 * without it. It prints errno as main begins and dlerror() after its first
 * CUDA calls (a test compares both with a run without the shim). Then it
 * closes every descriptor above stderr, as a daemon or a spawn helper
 * does, opens two files of its own (they get descriptors 3 and 4), and
 * allocates inside a signal handler, so that the shim's stacks step
 * through a signal frame. Its files must be as it left them: content and
 * offsets (issue 32, item 1: libunwind's validation pipe had those
 * numbers). Usage: prog_fds DIR. Exit 0, or PROG_BAD_STATE. */
#define _GNU_SOURCE
#include "progs.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

static void allocate_here(int sig)
{
    (void)sig;
    CUdeviceptr p;
    if (cuMemAlloc(&p, 4096) == CUDA_SUCCESS)
        cuMemFree(p);
}

static void check_file(int fd, const char *want)
{
    char got[64] = { 0 };
    EXPECT(lseek(fd, 0, SEEK_CUR) == (off_t)strlen(want));
    EXPECT(pread(fd, got, sizeof got - 1, 0) == (ssize_t)strlen(want));
    EXPECT(strcmp(got, want) == 0);
}

int main(int argc, char **argv)
{
    printf("errno at main: %d\n", errno);
    if (argc < 2)
        return PROG_BAD_USAGE;
    use_primary(0);
    allocate_here(0);  /* tracking and its stacks are on */
    const char *error = dlerror();
    printf("dlerror: %s\n", error != NULL ? error : "(none)");
    fflush(stdout);
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    char path[4096];
    snprintf(path, sizeof path, "%s/first", argv[1]);
    int first = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    snprintf(path, sizeof path, "%s/second", argv[1]);
    int second = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    EXPECT(first == 3 && second == 4);
    EXPECT(write(first, "first file", 10) == 10);
    EXPECT(write(second, "second one", 10) == 10);
    struct sigaction sa = { 0 };
    sa.sa_handler = allocate_here;
    sigaction(SIGUSR1, &sa, NULL);
    for (int i = 0; i < 20; i++)
        raise(SIGUSR1);
    check_file(first, "first file");
    check_file(second, "second one");
    return 0;
}
