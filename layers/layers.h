// The public header of layers/: every reference layer, header-only, templated over the scalar type.
#pragma once

#include "attention.h"
#include "deepsets.h"
#include "embedding.h"
#include "encoder.h"
#include "pointwise.h"
#include "pooling.h"
#include "position.h"
#include "rnn.h"
#include "scalar.h"
#include "weights.h"
