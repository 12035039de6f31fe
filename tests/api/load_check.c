/* libjoules may be loaded into any process: loading it starts no thread and writes nothing, and
 * neither does asking its version.  dlopen()s the library named on the command line with stdout
 * and stderr pointed at a pipe, then counts the threads of this process and the bytes written. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int threads(void) {
  int n = 0;
  struct dirent* e;
  DIR* d = opendir("/proc/self/task");
  if (d == NULL) return -1;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

int main(int argc, char** argv) {
  int out[2];
  int saved_out, saved_err, before, after;
  char buf[256];
  ssize_t got;
  void* lib;
  const char* (*version)(void);
  if (argc < 2) return 2;
  if (pipe2(out, O_NONBLOCK) != 0) return 2;
  fflush(stdout);
  saved_out = dup(1);
  saved_err = dup(2);
  dup2(out[1], 1);
  dup2(out[1], 2);
  before = threads();
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  version = lib ? (const char* (*)(void))dlsym(lib, "joules_version") : NULL;
  if (version != NULL) version();
  after = threads();
  fflush(stdout);
  fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  got = read(out[0], buf, sizeof buf - 1);
  if (lib == NULL || version == NULL) {
    printf("cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  if (after != before) {
    printf("loading started %d thread(s)\n", after - before);
    return 1;
  }
  if (got > 0) {
    buf[got] = '\0';
    printf("loading wrote: %s\n", buf);
    return 1;
  }
  printf("load: ok (%s, %d thread(s))\n", version(), after);
  return 0;
}
