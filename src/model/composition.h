// composition.h: Elhage et al. 2021's Q-, K- and V-composition scores of every earlier head into every
// later head, from the weights (composition.c; docs/interpretability.md).
#ifndef AW_MODEL_COMPOSITION_H
#define AW_MODEL_COMPOSITION_H

#include "transformer.h"

// AW_OK when the model has scores (a pre-norm decoder with softmax attention in every layer), else
// AW_ERR_ARG saying why.
int model_composition_check(const aw_model *m);
// q, k, v (layers, H, layers, H) each: [l2, h2, l1, h1] is the composition of the earlier head
// (l1, h1) into the later head (l2, h2), 0 where l1 >= l2.
int model_composition_scores(const aw_model *m, float *q, float *k, float *v);

#endif
