/* Calls every function of cali.h and cali_variant.h/cali_types.h, with
 * checks; prints "api: all checks passed" and exits 0 when they pass.
 * The Rust test runs it with CALI_LOG_VERBOSITY unset and checks the
 * error messages it provokes. */
#include <caliper/cali.h>
#include <caliper/cali-manager.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            printf("api: check failed at line %d: %s\n", __LINE__, #cond); \
            ++failures;                                                    \
        }                                                                  \
    } while (0)

static int count_entries(void* arg, cali_id_t attr, cali_variant_t val)
{
    (void) attr;
    (void) val;
    ++*(int*) arg;
    return 1;
}

static int find_region(void* arg, cali_id_t attr, cali_variant_t val)
{
    if (attr == cali_region_attr_id && cali_variant_get_type(val) == CALI_TYPE_STRING
        && strcmp((const char*) cali_variant_get_data(&val), "pulled") == 0)
        *(int*) arg = 1;
    return 1;
}

int main(void)
{
    /* configuration before initialization */
    CHECK(!cali_is_initialized());
    cali_config_preset("CALI_LOG_VERBOSITY", "0");
    cali_config_set("CALI_CALIPER_ATTRIBUTE_DEFAULT_SCOPE", "thread");
    cali_config_allow_read_env(1);
    cali_init();
    CHECK(cali_is_initialized());
    cali_config_set("CALI_SERVICES_ENABLE", "event"); /* logs: has no effect */

    CHECK(strlen(cali_caliper_version()) > 0);
    CHECK(cali_region_attr_id != CALI_INV_ID);
    CHECK(cali_phase_attr_id != CALI_INV_ID && cali_loop_attr_id != CALI_INV_ID);
    CHECK(cali_class_aggregatable_attr_id != CALI_INV_ID && cali_class_iteration_attr_id != CALI_INV_ID);
    CHECK(cali_class_symboladdress_attr_id != CALI_INV_ID && cali_class_memoryaddress_attr_id != CALI_INV_ID);

    /* types */
    CHECK(strcmp(cali_type2string(CALI_TYPE_DOUBLE), "double") == 0);
    CHECK(cali_string2type("uint") == CALI_TYPE_UINT);
    char buf[128];
    CHECK(cali_prop2string(CALI_ATTR_SCOPE_THREAD | CALI_ATTR_NESTED, buf, sizeof buf) > 0);
    CHECK(strcmp(buf, "default:thread_scope:nested:level_0") == 0);
    CHECK(cali_prop2string(CALI_ATTR_NESTED, buf, 4) == -1);
    CHECK(cali_string2prop("asvalue:process_scope") == (CALI_ATTR_ASVALUE | CALI_ATTR_SCOPE_PROCESS));

    /* variants */
    bool ok = false;
    cali_variant_t v = cali_make_empty_variant();
    CHECK(cali_variant_is_empty(v));
    v = cali_make_variant_from_int(-42);
    CHECK(cali_variant_get_type(v) == CALI_TYPE_INT && cali_variant_to_int(v, &ok) == -42 && ok);
    CHECK(cali_variant_to_int64(cali_make_variant_from_int64(-5000000000LL), &ok) == -5000000000LL && ok);
    CHECK(cali_variant_to_uint(cali_make_variant_from_uint(7), &ok) == 7 && ok);
    CHECK(cali_variant_to_double(cali_make_variant_from_double(2.5), &ok) == 2.5 && ok);
    CHECK(cali_variant_to_bool(cali_make_variant_from_bool(true), &ok) && ok);
    CHECK(cali_variant_to_type(cali_make_variant_from_type(CALI_TYPE_ADDR), &ok) == CALI_TYPE_ADDR && ok);
    int x = 1;
    CHECK(cali_variant_get_ptr(cali_make_variant_from_ptr(&x)) == &x);
    cali_variant_t s1 = cali_make_variant_from_string("abc");
    cali_variant_t s2 = cali_make_variant(CALI_TYPE_STRING, "abd", 4);
    CHECK(cali_variant_get_size(s1) == 4 && strcmp((const char*) cali_variant_get_data(&s1), "abc") == 0);
    CHECK(cali_variant_compare(s1, s2) < 0 && cali_variant_compare(s2, s1) > 0);
    CHECK(cali_variant_eq(s1, cali_make_variant_from_string("abc")) && !cali_variant_eq(s1, s2));
    CHECK(cali_variant_compare(cali_make_variant_from_int(1), cali_make_variant_from_double(0.5)) < 0);
    unsigned char packed[32];
    size_t n = cali_variant_pack(cali_make_variant_from_double(-1.5), packed), inc = 0;
    cali_variant_t back = cali_variant_unpack(packed, &inc, &ok);
    CHECK(ok && inc == n && cali_variant_to_double(back, 0) == -1.5);

    /* attributes */
    cali_id_t a_int = cali_create_attribute("api.int", CALI_TYPE_INT, CALI_ATTR_ASVALUE);
    CHECK(a_int != CALI_INV_ID && cali_find_attribute("api.int") == a_int);
    CHECK(strcmp(cali_attribute_name(a_int), "api.int") == 0);
    CHECK(cali_attribute_type(a_int) == CALI_TYPE_INT);
    CHECK(cali_attribute_properties(a_int) == 21);
    CHECK(cali_create_attribute("api.int", CALI_TYPE_STRING, 0) == a_int);
    CHECK(cali_find_attribute("api.nonexistent") == CALI_INV_ID);
    CHECK(cali_attribute_name(CALI_INV_ID) == NULL && cali_attribute_type(CALI_INV_ID) == CALI_TYPE_INV);
    cali_id_t       meta_attr = cali_create_attribute("api.unit", CALI_TYPE_STRING, CALI_ATTR_DEFAULT);
    cali_id_t       meta_ids[2] = { meta_attr, cali_class_aggregatable_attr_id };
    cali_variant_t  meta_vals[2] = { cali_make_variant_from_string("sec"), cali_make_variant_from_bool(true) };
    cali_id_t a_meta = cali_create_attribute_with_metadata("api.metric", CALI_TYPE_DOUBLE, CALI_ATTR_ASVALUE, 2,
                                                           meta_ids, meta_vals);
    CHECK(cali_attribute_properties(a_meta) & CALI_ATTR_AGGREGATABLE);
    CHECK(cali_create_attribute("api.badtype", (cali_attr_type) 42, 0) == CALI_INV_ID);
    CHECK(cali_create_attribute(NULL, CALI_TYPE_INT, 0) == CALI_INV_ID);

    /* a channel that traces into a file */
    const char* kv[][2] = { { "CALI_SERVICES_ENABLE", "event,trace" }, { NULL, NULL } };
    cali_configset_t cfg = cali_create_configset(kv);
    cali_configset_set(cfg, "CALI_CHANNEL_FLUSH_ON_EXIT", "false");
    cali_id_t chn = cali_create_channel("api.channel", 0, cfg);
    cali_delete_configset(cfg);
    CHECK(chn != CALI_INV_ID && cali_channel_is_active(chn));
    cali_deactivate_channel(chn);
    CHECK(!cali_channel_is_active(chn));
    cali_activate_channel(chn);
    CHECK(cali_channel_is_active(chn));
    cali_id_t idle = cali_create_channel("api.idle", CALI_CHANNEL_LEAVE_INACTIVE | CALI_CHANNEL_ALLOW_READ_ENV, NULL);
    CHECK(idle != CALI_INV_ID && !cali_channel_is_active(idle));
    cali_delete_channel(idle);
    CHECK(!cali_channel_is_active(idle)); /* logs: invalid channel id */

    /* a deleted channel writes nothing at exit (the test checks the file) */
    const char* deleted_out = getenv("API_DELETED_CHANNEL_OUTPUT");
    if (deleted_out) {
        const char* dkv[][2] = { { "CALI_SERVICES_ENABLE", "event,trace,recorder" },
                                 { "CALI_RECORDER_FILENAME", deleted_out },
                                 { NULL, NULL } };
        cali_configset_t dcfg = cali_create_configset(dkv);
        cali_id_t        deleted = cali_create_channel("api.deleted", 0, dcfg);
        cali_delete_configset(dcfg);
        cali_begin_region("before.delete");
        cali_end_region("before.delete");
        cali_delete_channel(deleted);
    }

    /* regions */
    cali_begin_region("outer");
    cali_begin_phase("phase1");
    cali_begin_comm_region("comm1");
    CHECK(strcmp(cali_get_current_region_or("none"), "comm1") == 0);
    cali_end_comm_region("comm1");
    cali_end_phase("phase1");
    CHECK(strcmp(cali_get_current_region_or("none"), "outer") == 0);
    cali_end_region("outer");
    CHECK(strcmp(cali_get_current_region_or("none"), "none") == 0);

    /* by id */
    cali_id_t a_str = cali_create_attribute("api.string", CALI_TYPE_STRING, CALI_ATTR_DEFAULT);
    cali_id_t a_dbl = cali_create_attribute("api.double", CALI_TYPE_DOUBLE, CALI_ATTR_ASVALUE);
    cali_id_t a_bool = cali_create_attribute("api.bool", CALI_TYPE_BOOL, CALI_ATTR_DEFAULT);
    cali_begin_int(a_int, 3);
    CHECK(cali_variant_to_int(cali_get(a_int), 0) == 3);
    cali_set_int(a_int, 4);
    CHECK(cali_variant_to_int(cali_get(a_int), 0) == 4);
    long long big = 1LL << 40;
    cali_set(a_int, &big, sizeof big);
    CHECK(cali_variant_to_int64(cali_get(a_int), 0) == big);
    cali_end(a_int);
    CHECK(cali_variant_is_empty(cali_get(a_int)));
    cali_begin_double(a_dbl, 1.5);
    cali_set_double(a_dbl, 2.5);
    CHECK(cali_variant_to_double(cali_get(a_dbl), 0) == 2.5);
    cali_end(a_dbl);
    cali_begin_string(a_str, "first");
    cali_set_string(a_str, "second");
    cali_variant_t got = cali_get(a_str);
    CHECK(strcmp((const char*) cali_variant_get_data(&got), "second") == 0);
    cali_end(a_str);
    cali_begin_string(a_str, "checked");
    cali_safe_end_string(a_str, "checked");
    CHECK(cali_variant_is_empty(cali_get(a_str)));
    cali_begin(a_bool);
    CHECK(cali_variant_to_bool(cali_get(a_bool), 0));
    cali_end(a_bool);
    cali_begin_int(a_str, 1); /* logs: type mismatch */
    CHECK(cali_variant_is_empty(cali_get(a_str)));
    cali_begin_int(CALI_INV_ID, 1); /* logs: invalid attribute id */

    /* by name */
    cali_begin_byname("api.flag");
    cali_begin_double_byname("api.bn.double", 0.5);
    cali_begin_int_byname("api.bn.int", 5);
    cali_begin_string_byname("api.bn.string", "s");
    CHECK(cali_variant_to_int(cali_get(cali_find_attribute("api.bn.int")), 0) == 5);
    cali_end_byname("api.bn.string");
    cali_end_byname("api.bn.int");
    cali_end_byname("api.bn.double");
    cali_end_byname("api.flag");
    cali_end_byname("api.unknown.name"); /* ignored */
    cali_set_double_byname("api.set.double", 1.0);
    cali_set_int_byname("api.set.int", 2);
    cali_set_string_byname("api.set.string", "v");
    CHECK(cali_attribute_properties(cali_find_attribute("api.set.int")) & CALI_ATTR_UNALIGNED);
    CHECK(cali_variant_to_int(cali_get(cali_find_attribute("api.set.int")), 0) == 2);
    cali_set_global_double_byname("api.global.double", 3.5);
    cali_set_global_int_byname("api.global.int", 6);
    cali_set_global_string_byname("api.global.string", "g");
    cali_set_global_uint_byname("api.global.uint", 7);
    cali_id_t g = cali_find_attribute("api.global.uint");
    CHECK(cali_attribute_properties(g) & CALI_ATTR_GLOBAL);
    CHECK(cali_variant_to_uint(cali_get(g), 0) == 7);

    /* snapshots */
    cali_id_t      trig_ids[2] = { a_int, a_str };
    cali_variant_t trig_vals[2] = { cali_make_variant_from_int(9), cali_make_variant_from_string("trig") };
    cali_push_snapshot(CALI_SCOPE_THREAD, 2, trig_ids, trig_vals);
    cali_channel_push_snapshot(chn, CALI_SCOPE_THREAD, 2, trig_ids, trig_vals);

    cali_begin_region("pulled");
    cali_begin_int(a_int, 11);
    unsigned char snap[1024];
    size_t        need = cali_channel_pull_snapshot(chn, CALI_SCOPE_THREAD, sizeof snap, snap);
    CHECK(need > 0 && need <= sizeof snap);
    CHECK(cali_channel_pull_snapshot(chn, CALI_SCOPE_THREAD, 1, snap) == need); /* too small */
    size_t read = 0;
    int    entries = 0;
    cali_unpack_snapshot(snap, &read, count_entries, &entries);
    CHECK(read == need && entries >= 2);
    read = 0;
    CHECK(cali_variant_to_int(cali_find_first_in_snapshot(snap, a_int, &read), 0) == 11 && read == need);
    int found = 0;
    cali_find_all_in_snapshot(snap, cali_region_attr_id, NULL, find_region, &found);
    CHECK(found);
    cali_end(a_int);
    cali_end_region("pulled");
    CHECK(cali_channel_pull_snapshot(12345, CALI_SCOPE_THREAD, sizeof snap, snap) == 0); /* logs */
    /* a malformed snapshot (an 11-byte number) is logged; nothing is read or called */
    unsigned char bad[13] = { 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0 };
    read    = 0;
    entries = 0;
    cali_unpack_snapshot(bad, &read, count_entries, &entries);
    CHECK(read == 0 && entries == 0);
    /* more trigger entries than the reference's 64: the first 64 are used (logs) */
    cali_id_t      many_ids[65];
    cali_variant_t many_vals[65];
    for (int i = 0; i < 65; ++i) {
        many_ids[i]  = a_int;
        many_vals[i] = cali_make_variant_from_int(i);
    }
    cali_push_snapshot(CALI_SCOPE_THREAD, 65, many_ids, many_vals);

    /* channel blackboard */
    cali_variant_t chname = cali_channel_get(chn, cali_find_attribute("cali.channel"));
    CHECK(strcmp((const char*) cali_variant_get_data(&chname), "api.channel") == 0);

    /* loops */
    cali_id_t iter = cali_make_loop_iteration_attribute("apiloop");
    CHECK(strcmp(cali_attribute_name(iter), "iteration#apiloop") == 0);
    CHECK(cali_attribute_properties(iter) & CALI_ATTR_ASVALUE);
    CALI_MARK_LOOP_BEGIN(l, "apiloop");
    for (int i = 0; i < 2; ++i) {
        CALI_MARK_ITERATION_BEGIN(l, i);
        CHECK(cali_variant_to_int(cali_get(__cali_iter_l), 0) == i);
        CALI_MARK_ITERATION_END(l);
    }
    CALI_MARK_LOOP_END(l);
    CALI_WRAP_STATEMENT("wrapped", x += 1);
    CALI_MARK_BEGIN("macro");
    CALI_MARK_PHASE_BEGIN("macro.phase");
    CALI_MARK_COMM_REGION_BEGIN("macro.comm");
    CALI_MARK_COMM_REGION_END("macro.comm");
    CALI_MARK_PHASE_END("macro.phase");
    CALI_MARK_END("macro");

    /* flush */
    cali_channel_flush(chn, CALI_FLUSH_CLEAR_BUFFERS);
    cali_flush(0);

    /* C ConfigManager */
    cali_ConfigManager mgr;
    cali_ConfigManager_new(&mgr);
    CHECK(!cali_ConfigManager_add(&mgr, "runtime-report,blagarbl"));
    CHECK(cali_ConfigManager_error(&mgr));
    CHECK(strstr(cali_ConfigManager_error_msg(&mgr), "blagarbl") != NULL);
    cali_SHROUD_array msg;
    cali_ConfigManager_error_msg_bufferify(&mgr, &msg);
    CHECK(strstr(msg.addr.ccharp, "blagarbl") != NULL && msg.elem_len == strlen(msg.addr.ccharp));
    cali_SHROUD_memory_destructor(&msg.cxx);
    CHECK(strlen(cali_ConfigManager_check(&mgr, "runtime-report", false)) == 0);
    CHECK(strlen(cali_ConfigManager_check(&mgr, "no-such-config", false)) > 0);
    cali_ConfigManager_delete(&mgr);
    cali_ConfigManager_new(&mgr);
    cali_ConfigManager_set_default_parameter(&mgr, "output", "stdout");
    cali_ConfigManager_set_default_parameter_for_config(&mgr, "runtime-report", "region.count", "true");
    cali_ConfigManager_add_option_spec(&mgr, "[]");
    cali_ConfigManager_add_config_spec(&mgr, "{\"name\":\"api-config\",\"services\":[\"event\"]}");
    CHECK(cali_ConfigManager_add(&mgr, "runtime-report"));
    cali_ConfigManager_start(&mgr);
    cali_begin_region("managed");
    cali_end_region("managed");
    cali_ConfigManager_stop(&mgr);
    cali_ConfigManager_flush(&mgr);
    CHECK(!cali_ConfigManager_error(&mgr));
    cali_ConfigManager_delete(&mgr);
    cali_ConfigManager_start(&mgr); /* logs: deleted */

    /* data tracking: accepted, and logged once as not available */
    int    tracked[16] = { 0 };
    size_t dims[2]     = { 4, 4 };
    CALI_DATATRACKER_TRACK(tracked, sizeof tracked);
    CALI_DATATRACKER_TRACK_DIMENSIONAL(tracked, sizeof(int), dims, 2);
    CALI_DATATRACKER_UNTRACK(tracked);

    /* bad arguments are logged, not fatal */
    cali_begin_region(NULL);
    cali_set_string_byname("x", NULL);
    cali_delete_channel(999);

    printf("api: %s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
