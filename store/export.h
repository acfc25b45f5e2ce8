/* SPDX-License-Identifier: MIT */
/* store/export.h -- a recorded run as the reference library's JSONL
 * trajectory, or as one self-contained HTML page.
 *
 * Both take the object store_run_load() returns (store/store.h) and only
 * read it. Its events must be in seq order, each an object with a "kind"
 * (a string), a "node" (an integer, 0 the root) and a "t_ns" (an
 * integer); "parent", "depth" and "iteration" are integers when present,
 * "text" a string or null, "data" an object or null. Every event carries
 * the number of the node it is about, "child" and "child_end" included
 * (they are the child's first and last). A node other than the root first
 * shows up with its "parent" already known (children start after their
 * parent), at most 64 levels down, and its first event tells which of the
 * parent's code blocks started it: the parent's latest "code" event
 * before it. Events of kinds not listed in store.h are ignored, so older
 * exporters read newer runs. A run that breaks these rules is malformed:
 * the exporters return NULL with err naming the run and the event
 * (RLM_EPARSE).
 *
 * Either may be called from any thread; the run is not modified.
 */
#ifndef RLM_STORE_EXPORT_H
#define RLM_STORE_EXPORT_H

#include "../common/common.h"

struct cJSON;

/* The run as JSON lines, each ending in '\n': first {"type":"metadata",
 * ...}, then one {"type":"iteration", ...} per root-model turn of the root
 * node (with a reply), the children's trajectories nested in the
 * "rlm_calls" of the code block that started them (docs/store.md has the
 * fields and where each comes from). Returns malloc'd text the caller
 * frees, or NULL with err: RLM_EPARSE for a malformed run, RLM_ETOOBIG
 * past 1 GiB. */
char *store_export_jsonl(const struct cJSON *run, struct rlm_err *err);

/* The run as one HTML page that needs no network: the viewer template
 * (store/viewer.html, embedded at build time) with the run's JSON inside
 * <script type="application/json" id="run">, escaped so that no text of
 * the run can end the script ("<", ">", "&", U+2028, U+2029 written as
 * \uXXXX). The page's script builds everything with textContent. Returns
 * malloc'd text the caller frees, or NULL with err as above. */
char *store_export_html(const struct cJSON *run, struct rlm_err *err);

/* The run as it may be shown: its members shared with run (references:
 * free the view with cJSON_Delete before run), but for the config and
 * the note, copied without what may be a credential (keys named like
 * one, an --api-key in any spelling and its value, the user:password@ of
 * URLs). What rlm runs show --json and the HTML page print. */
struct cJSON *store_run_public(const struct cJSON *run);
/* A run's config (a JSON object) without its members named like a
 * credential (*key*, *secret*, *password*, *auth*, *credential*, *token):
 * a fresh object the caller frees. */
struct cJSON *store_config_public(const struct cJSON *config);

#endif
