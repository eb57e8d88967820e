// Everything public in one include.
#pragma once

#include "loom/debug.hpp"
#include "loom/decode.hpp"
#include "loom/error.hpp"
#include "loom/executor.hpp"
#include "loom/listen.hpp"
#include "loom/model.hpp"
#include "loom/onnx.hpp"
#include "loom/placement.hpp"
#include "loom/policy.hpp"
#include "loom/profile.hpp"
#include "loom/sim.hpp"
#include "loom/tensor.hpp"
#include "loom/trace.hpp"
#include "loom/workloads.hpp"
