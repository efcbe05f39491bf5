// The web page's static files, embedded in the binary at build time (web/, built by web/build.mjs
// with esbuild and turned into a generated .cpp by web/embed.cmake; docs/SERVER.md "Web page").
#pragma once

#include <cstddef>
#include <string_view>

namespace hogwild::server {

struct WebAsset {
  std::string_view path;          // URL path, e.g. "/" or "/assets/app.js"
  std::string_view content_type;  // e.g. "text/html; charset=utf-8"
  const unsigned char* data;
  size_t size;
};

/// The embedded file served at `path`, or nullptr.
const WebAsset* find_web_asset(std::string_view path);

}  // namespace hogwild::server
