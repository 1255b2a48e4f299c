/* The reference's caliper/cali_macros.h. In C++ the annotation macros
 * make objects of the Annotation.h classes, whose members libcaliper
 * defines. */
#pragma once

#ifdef __cplusplus

#include "Annotation.h"

#define CALI_CXX_MARK_FUNCTION cali::Function __cali_ann##__func__(__func__)

#define CALI_CXX_MARK_LOOP_BEGIN(loop_id, name) cali::Loop __cali_loop_##loop_id(name)

#define CALI_CXX_MARK_LOOP_END(loop_id) __cali_loop_##loop_id.end()

#define CALI_CXX_MARK_LOOP_ITERATION(loop_id, iter) \
    cali::Loop::Iteration __cali_iter_##loop_id(__cali_loop_##loop_id.iteration(static_cast<int>(iter)))

#define CALI_CXX_MARK_SCOPE(name) cali::ScopeAnnotation __cali_ann_scope##__LINE__(name)

#endif // __cplusplus

#define CALI_MARK_FUNCTION_BEGIN cali_begin_region(__func__)

#define CALI_MARK_FUNCTION_END cali_end_region(__func__)

#define CALI_WRAP_STATEMENT(name, statement) \
    {                                        \
        cali_begin_region(name);             \
        statement;                           \
        cali_end_region(name);               \
    }

#define CALI_MARK_LOOP_BEGIN(loop_id, name)       \
    cali_init();                                  \
    cali_begin_string(cali_loop_attr_id, (name)); \
    cali_id_t __cali_iter_##loop_id = cali_make_loop_iteration_attribute(name);

#define CALI_MARK_LOOP_END(loop_id) cali_end(cali_loop_attr_id)

#define CALI_MARK_ITERATION_BEGIN(loop_id, iter) cali_begin_int(__cali_iter_##loop_id, ((int) (iter)))

#define CALI_MARK_ITERATION_END(loop_id) cali_end(__cali_iter_##loop_id)

#define CALI_MARK_BEGIN(name) cali_begin_region(name)

#define CALI_MARK_END(name) cali_end_region(name)

#define CALI_MARK_PHASE_BEGIN(name) cali_begin_phase(name)

#define CALI_MARK_PHASE_END(name) cali_end_phase(name)

#define CALI_MARK_COMM_REGION_BEGIN(name) cali_begin_comm_region(name)

#define CALI_MARK_COMM_REGION_END(name) cali_end_comm_region(name)
