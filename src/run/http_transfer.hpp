// kbuild-http's side of the HTTP remote cache (http_store): it reads
// requests from kbuild, makes them through libcurl and writes the answers
// back, one connection kept for the build. Built into kbuild-http alone: the
// one place that links libcurl (dynamically; http_store says why).
#pragma once

namespace kbuild {

// Serves the requests read from `in` (http_store's frames) until it ends
// (or a request is out of step), writing each answer to `out`. Returns the
// exit status: 0, or 1 when libcurl cannot start.
int serve_http_exchanges(int in, int out);

}  // namespace kbuild
