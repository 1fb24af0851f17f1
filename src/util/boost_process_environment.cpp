// Boost 1.81's header-only Boost.Process v2 leaves process_environment's
// implementation out of its headers; it is compiled once, here.
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/impl/environment.ipp>
