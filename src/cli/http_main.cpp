// kbuild-http: the HTTP remote cache's helper (src/run/http_store.hpp says
// why it is a program of its own). Run by kbuild, which speaks to it on its
// stdin and stdout; not meant to be run by hand.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <initializer_list>

#include "run/http_transfer.hpp"

int main() {
  if (::isatty(0)) {
    std::fputs("kbuild-http: the HTTP remote cache's helper, run by kbuild (not by hand)\n",
               stderr);
    return 2;
  }
  // Ctrl-C reaches kbuild, which ends this helper: a wait kbuild gives up
  // is ended by kbuild, not cut short here. Gone kbuild: its next read or
  // write ends it.
  for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGTERM}) ::signal(sig, SIG_IGN);
  return kbuild::serve_http_exchanges(0, 1);
}
