// kbuild-http: the HTTP remote cache's helper (src/run/http_store.hpp says
// why it is a program of its own). Run by kbuild, which speaks to it on its
// stdin and stdout; not meant to be run by hand.
#include <unistd.h>

#include <cstdio>

#include "run/http_transfer.hpp"

int main() {
  if (::isatty(0)) {
    std::fputs("kbuild-http: the HTTP remote cache's helper, run by kbuild (not by hand)\n",
               stderr);
    return 2;
  }
  return kbuild::serve_http_exchanges(0, 1);
}
