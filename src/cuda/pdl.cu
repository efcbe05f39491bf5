// Programmatic dependent launch switch (pdl.h).
#include <cuda_runtime.h>

#include <atomic>

#include "cuda/pdl.h"

namespace hogwild::cuda {
namespace {
std::atomic<bool> g_programmatic_launch{true};
}

bool hopper_or_later() {
  static const bool yes = [] {
    int dev = 0, major = 0;
    return cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
           major >= 9;
  }();
  return yes;
}

void set_programmatic_launch(bool on) { g_programmatic_launch.store(on); }
bool programmatic_launch() {
  // Programmatic stream serialization is a Hopper (compute capability 9.0) feature; older devices
  // get ordinary launches (the device code's griddepcontrol is compiled for sm_90 only anyway).
  return hopper_or_later() && g_programmatic_launch.load();
}

}  // namespace hogwild::cuda
