#include "help_page.hpp"

namespace gpumem::serve {

const std::string& help_page() {
  static const std::string page = R"(<!DOCTYPE html>
<html><head><title>gpumem exporter</title></head>
<body><h1>gpumem exporter</h1>
<p>GPU memory, per-process use, the peak over a sliding window, and traces published by
programs on this node, in the Prometheus text format: <a href="/metrics">/metrics</a>.</p>
</body></html>
)";
  return page;
}

}  // namespace gpumem::serve
