// Programmatic dependent launch (PDL, Hopper and later): the process-wide switch. Kernels of the
// forward are launched with cudaLaunchAttributeProgrammaticStreamSerialization, so a kernel's CTAs
// can start (and stream weights that do not depend on the previous kernel) while the previous
// kernel in the stream is still running; device side and the launch function in pdl.cuh.
#pragma once

namespace hogwild::cuda {

/// True when the current device has compute capability >= 9.0 (Hopper and later: programmatic
/// dependent launch, thread-block clusters, distributed shared memory). Read once.
bool hopper_or_later();

/// On by default (on devices of compute capability >= 9.0; older ones always get ordinary
/// launches). Off: every launch is an ordinary stream-ordered launch (for A/B measurements).
void set_programmatic_launch(bool on);
bool programmatic_launch();

}  // namespace hogwild::cuda
