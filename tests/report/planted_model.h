// A small model whose node and tensor names are markup and script, for the tests that the
// --report-html page shows them as text and runs none of them. Each planted script, if it
// ran, would set the attribute data-pwned on the page's <body>.
#pragma once

#include <string>

namespace stitch::test {

// The names planted, in the model's node order (Relu, Exp, ReduceSum).
inline const std::string kPlantedNodeNames[] = {
    "<script>document.body.setAttribute('data-pwned','node')</script>",
    "</script><script>document.body.setAttribute('data-pwned','json')</script>",
    "\"><img src=x onerror=\"document.body.setAttribute('data-pwned','attr')\">",
};

// Writes the model into `dir`; returns its path.
std::string write_planted_model(const std::string& dir);

} // namespace stitch::test
