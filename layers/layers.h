// The public header of layers/: every reference layer, header-only, templated over the scalar type.
#pragma once

#include "layers/attention.h"
#include "layers/deepsets.h"
#include "layers/embedding.h"
#include "layers/encoder.h"
#include "layers/pointwise.h"
#include "layers/pooling.h"
#include "layers/position.h"
#include "layers/rnn.h"
#include "scalars/scalar.h"
#include "scalars/weights.h"
