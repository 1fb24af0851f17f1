// Interrupts: held pending by a guard, caught (never acted on in a handler)
// while a watch is alive, and put back as they were after.
#include "util/process.hpp"

#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include <catch2/catch.hpp>

using namespace kbuild;

namespace {

bool blocked(int sig) {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, sig) == 1;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

}  // namespace

TEST_CASE("the interrupt signals: INT, TERM, HUP and QUIT", "[unit][interrupts]") {
  sigset_t set = interrupt_signals();
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) CHECK(sigismember(&set, sig) == 1);
  CHECK(sigismember(&set, SIGKILL) == 0);
  CHECK(sigismember(&set, SIGPIPE) == 0);
}

TEST_CASE("a guard holds them pending and restores the mask it found", "[unit][interrupts]") {
  REQUIRE_FALSE(blocked(SIGTERM));
  {
    InterruptGuard outer;
    CHECK(blocked(SIGINT));
    CHECK(blocked(SIGTERM));
    CHECK_FALSE(blocked(SIGUSR1));
    {
      InterruptGuard inner;
      CHECK(blocked(SIGHUP));
    }
    CHECK(blocked(SIGHUP));  // the outer guard still holds them
  }
  CHECK_FALSE(blocked(SIGTERM));
}

TEST_CASE("a watch remembers the first interrupt and wakes its descriptor", "[unit][interrupts]") {
  struct sigaction before {};
  sigaction(SIGTERM, nullptr, &before);
  {
    InterruptWatch watch;
    CHECK(interrupt_received() == 0);
    REQUIRE(interrupt_fd() >= 0);
    CHECK_FALSE(readable(interrupt_fd()));
    ::raise(SIGTERM);  // caught: the test goes on
    ::raise(SIGINT);
    CHECK(interrupt_received() == SIGTERM);
    CHECK(readable(interrupt_fd()));
    {
      InterruptWatch nested;  // not the first: it keeps what was caught
      CHECK(interrupt_received() == SIGTERM);
    }
    CHECK(interrupt_received() == SIGTERM);
  }
  // kbuild is ending: a second interrupt (timeout's to the group) is caught
  // too, not fatal before its cleanup.
  struct sigaction ending {};
  sigaction(SIGTERM, nullptr, &ending);
  CHECK(ending.sa_handler != before.sa_handler);
  ::raise(SIGTERM);  // the test goes on
  {
    InterruptWatch fresh;  // the first watch again starts with nothing caught
    CHECK(interrupt_received() == 0);
    CHECK_FALSE(readable(interrupt_fd()));
  }
  struct sigaction after {};
  sigaction(SIGTERM, nullptr, &after);
  CHECK(after.sa_handler == before.sa_handler);  // put back once a watch ends with none caught
}
