/* vision.h - internal link between the vision model table (vision_models.c)
 * and the cached entry points (vision_api.c). */
#ifndef RLX_MODELS_VISION_H
#define RLX_MODELS_VISION_H

#include "rlx_models.h"

/* rlx_vision_build that also returns the param nodes, in the info's order
 * (params must hold RLX_VISION_MAX_PARAMS entries). */
rlx_status rlx_vision_build_with_params(rlx_graph *g, const char *slug, int32_t batch, rlx_node *logits,
                                        rlx_node *loss, rlx_node *params);

#endif
