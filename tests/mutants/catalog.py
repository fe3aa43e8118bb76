"""Every check on a consistency or security path, each as the mutation that removes it and the tests that must
notice (:class:`tests.mutants.runner.Mutant`).

Add one with each new check: its original text must occur exactly once in its file
(``tests/unit/test_mutants.py`` keeps the list in step with the code). Tests are named as narrowly as
catches the mutant: every selection runs once unchanged first, then with its mutant.
"""

from __future__ import annotations

from .runner import Mutant

__all__ = ["MUTANTS"]

SAVED_INDEX = "tests/reliability/test_saved_index.py"
ANN_CACHE = "tests/reliability/test_ann_cache.py"
CLI_FILES = "tests/unit/test_cli_files.py"
FORK = "tests/reliability/test_fork.py"
CONNINFO = "tests/unit/test_conninfo.py"
UI_PAGES = "tests/integration/ui/test_ui_pages.py"
LC_LONG = "tests/integration/langchain/test_middleware_long.py"
LI_LONG = "tests/integration/llama_index/test_li_long_messages.py"

MUTANTS: tuple[Mutant, ...] = (
    # ------------------------------------------------------------ ranking
    Mutant(
        "neighbour-credit-assistant-weight",
        "sgmem/retrieval/search.py",
        "            ctx_w[said] *= np.float32(h.assistant_weight)\n",
        "",
        ("tests/unit/test_acts_in_context.py::test_the_assistants_words_lend_a_neighbouring_turn_less_than_the_users",),
        "the assistant's words lend a neighbour's lexical score as little as they weigh in their own turn",
    ),
    # ------------------------------------------------------------ saved index files
    Mutant(
        "cache-generation",
        "sgmem/retrieval/cachefiles.py",
        '            "generation": idx.generation,\n            "stamp": int(stamp[0]) if stamp else None,\n',
        '            "stamp": int(stamp[0]) if stamp else None,\n',
        (f"{SAVED_INDEX}::test_files_from_before_another_writer_deleted_rows_are_not_used",),
        "files saved before a later write (the scope's generation) are not used",
    ),
    Mutant(
        "cache-stamp",
        "sgmem/retrieval/cachefiles.py",
        '            "stamp": int(stamp[0]) if stamp else None,\n            "dim": idx.dim,\n',
        '            "dim": idx.dim,\n',
        (f"{SAVED_INDEX}::test_a_restored_backup_written_again_with_one_middle_turn_changed_is_not_served_stale",),
        "files of another history reaching the same generation (a restored backup written again) are not used",
    ),
    Mutant(
        "cache-acts-by",
        "sgmem/retrieval/cachefiles.py",
        '            "acts_by": acts_by,\n        }\n        if any(',
        "        }\n        if any(",
        (f"{SAVED_INDEX}::test_files_saved_under_another_act_classifier_are_not_used",),
        "files whose acts another classifier read are not used",
    ),
    Mutant(
        "cache-library-version",
        "sgmem/retrieval/cachefiles.py",
        '            "format": FORMAT,\n            "library": __version__,\n            "scope_id": idx.scope_id,\n'
        '            "generation": idx.generation,\n            "stamp": int(',
        '            "format": FORMAT,\n            "scope_id": idx.scope_id,\n'
        '            "generation": idx.generation,\n            "stamp": int(',
        (f"{SAVED_INDEX}::test_files_written_by_another_sgmem_version_are_not_used",),
        "files written by another sgmem version are not used",
    ),
    Mutant(
        "cache-file-signature",
        "sgmem/retrieval/cachefiles.py",
        '            if not _same_file(f"{stem}{suffix}", files.get(name)):\n                return None\n',
        "            pass\n",
        (f"{SAVED_INDEX}::test_changed_or_foreign_files_are_not_used",),
        "a cache file rewritten, replaced or cut short (size, time, inode) is not used",
    ),
    Mutant(
        "cache-probe-ids",
        "sgmem/retrieval/cachefiles.py",
        "        if row is None or tuple(row) != (idx.scope_id, ext_ids[r], float(at_ts[r]), int(idx._round_ids.view()[r])):",
        "        if row is None:",
        (f"{SAVED_INDEX}::test_files_of_another_store_of_the_same_shape_are_not_used[other ids]",),
        "probe turns equal SQLite's (caller id, time, round): files of another store are not used",
    ),
    Mutant(
        "cache-probe-vectors",
        "sgmem/retrieval/cachefiles.py",
        "        if not np.array_equal(np.frombuffer(row[4], dtype=np.float32), vecs[r]):\n            return False\n",
        "",
        (f"{SAVED_INDEX}::test_files_of_another_store_of_the_same_shape_are_not_used[other texts]",),
        "probe sentences' vectors equal SQLite's: another store with the same ids and shape is not used",
    ),
    Mutant(
        "cache-ann-digest",
        "sgmem/retrieval/cachefiles.py",
        "        if not _same_file(path, recorded) or digest(data) != expected:",
        "        if not _same_file(path, recorded):",
        (f"{ANN_CACHE}::test_a_damaged_hnsw_cache_is_ignored_and_rebuilt",),
        "HNSW links changed in place (time set back) are not used: their digest",
    ),
    Mutant(
        "cache-restores-exactly",
        "sgmem/retrieval/snapshot.py",
        '        arrays["turn_norms"] = idx.turn_sum_norms()\n',
        '        arrays["turn_norms"] = idx.turn_sum_norms() * 1.01\n',
        (
            f"{SAVED_INDEX}::test_a_reopened_store_answers_as_before_without_reading_its_rows",
            "tests/reliability/test_saved_index_scale.py",
        ),
        "the saved columns give back the index exactly (a column saved 1 % off is seen)",
    ),
    Mutant(
        "cache-discard-on-delete",
        "sgmem/write.py",
        "        discard_cache(cache_dir, scope_id)\n",
        "",
        ("tests/reliability/test_scrub.py::test_deleted_text_is_in_no_file_when_delete_returns",),
        "a delete removes the scope's cache files before it commits",
    ),
    Mutant(
        "cache-discard-torn-save",
        "sgmem/retrieval/cachefiles.py",
        '        for name in (f"scope-{scope_id}{suffix}", f"scope-{scope_id}{suffix}.tmp"):',
        '        for name in (f"scope-{scope_id}{suffix}",):',
        ("tests/reliability/test_scrub.py::test_a_cache_save_torn_part_way_leaves_no_deleted_text",),
        "a delete removes the temporary files a torn save left",
    ),
    # ------------------------------------------------------------ store files, deletion
    Mutant(
        "reader-leaves-no-log-files",
        "sgmem/store/sqlite.py",
        "            if self._reader_logs is not None:\n                remove_reader_logs(self._reader_logs)\n"
        "                self._reader_logs = None\n",
        "",
        ("tests/unit/test_first_hour.py::test_a_read_only_opening_leaves_the_store_folder_as_it_was",),
        "a read-only opening leaves no -wal / -shm file behind",
    ),
    Mutant(
        "scrub-after-delete",
        "sgmem/deletes.py",
        '            scrubbed = self._scrub() if counts["messages"] or self._unscrubbed else True',
        "            scrubbed = True",
        ("tests/reliability/test_scrub.py::test_deleted_text_is_in_no_file_when_delete_returns",),
        "a delete checkpoints the log: deleted text is in no file when it returns",
    ),
    # ------------------------------------------------------------ forks
    Mutant(
        "fork-takes-the-locks",
        "sgmem/forks.py",
        "        if lock.acquire(timeout=FORK_WAIT_S):",
        "        if False:",
        ("tests/reliability/test_fork.py::test_children_forked_while_the_checkpointer_runs_delete_and_scrub",),
        "a fork waits for the add, delete or checkpoint in progress",
    ),
    Mutant(
        "fork-registry-lock",
        "sgmem/forks.py",
        "    _registry_lock = threading.Lock()\n    _release()",
        "    _release()",
        (f"{FORK}::test_a_child_forked_while_another_thread_opens_a_memory_can_add",),
        "a child forked while another thread opens a Memory does not hang on the registry",
    ),
    Mutant(
        "fork-waits-for-warmup",
        "sgmem/memory.py",
        '        guard_at_fork(self, "_warming", rank=0)\n',
        "",
        (f"{FORK}::test_a_child_forked_while_warmup_runs_can_add[first encoding]",),
        "a fork waits for a warm-up in progress (no import half done in the child)",
    ),
    Mutant(
        "fork-waits-for-model-load",
        "sgmem/embed/minilm.py",
        '        guard_at_fork(self, "_lock", rank=3)\n',
        "",
        (f"{FORK}::test_a_child_forked_while_warmup_runs_can_add[a first add loading it]",),
        "a fork waits for a model load in progress",
    ),
    Mutant(
        "fork-child-embedder-lock",
        "sgmem/embed/minilm.py",
        "        if self._lock.locked():\n            self._lock = threading.Lock()\n",
        "        pass\n",
        (f"{FORK}::test_a_child_forked_while_warmup_runs_can_add[loading longer than a fork waits]",),
        "a child whose fork could not wait for a load loads the model itself, never waits for ever",
    ),
    # ------------------------------------------------------------ long messages in parts
    Mutant(
        "parts-never-blank",
        "sgmem/parts.py",
        "        e = min(s + cap, last)\n",
        "        e = s + cap\n",
        ("tests/unit/test_parts.py", LC_LONG, LI_LONG),
        "no part of a long message is blank (the store would refuse it and fail the turn)",
    ),
    Mutant(
        "parts-join-whole-runs",
        "sgmem/parts.py",
        "            if len(run) == n and all(_part(m) == (k, n) for k, m in enumerate(run)):",
        "            if True:",
        ("tests/unit/test_parts.py",),
        "only a whole run of parts is joined into one message",
    ),
    Mutant(
        "parts-excluded-middleware",
        "langchain_sgmem/middleware.py",
        '                out += part_ids({"role": "user", "content": render_text(m), "id": mid}, limits)',
        "                out.append(mid)",
        (f"{LC_LONG}::test_a_long_message_in_the_prompt_is_not_recalled_into_it_again",),
        "no part of a message in the prompt is recalled into it (LangChain middleware)",
    ),
    Mutant(
        "parts-excluded-llama-index",
        "llama_index_sgmem/memory.py",
        "        in_window = [m.id for run in runs[start:] for m in run if m.id]",
        "        in_window = [run[0].id for run in runs[start:] if run[0].id]",
        (f"{LI_LONG}::test_a_long_message_in_the_window_is_not_recalled_into_it_again",),
        "no part of a message in the window is recalled into it (LlamaIndex memory)",
    ),
    # ------------------------------------------------------------ the command line
    Mutant(
        "ingest-id-thread",
        "sgmem/cli.py",
        '    key = json.dumps([thread, position, message.get("role"), message.get("name"), message.get("content")])',
        '    key = json.dumps([position, message.get("role"), message.get("name"), message.get("content")])',
        (f"{CLI_FILES}::test_the_same_message_in_two_threads_or_twice_in_one_is_stored_each_time",),
        "an ingest id holds the thread: the same message in two threads is two messages",
    ),
    Mutant(
        "ingest-id-position",
        "sgmem/cli.py",
        '    key = json.dumps([thread, position, message.get("role"), message.get("name"), message.get("content")])',
        '    key = json.dumps([thread, message.get("role"), message.get("name"), message.get("content")])',
        (f"{CLI_FILES}::test_the_same_message_in_two_threads_or_twice_in_one_is_stored_each_time",),
        'an ingest id holds the position: "ok" said twice is two messages',
    ),
    Mutant(
        "ingest-id-content",
        "sgmem/cli.py",
        '    key = json.dumps([thread, position, message.get("role"), message.get("name"), message.get("content")])',
        '    key = json.dumps([thread, position, message.get("role"), message.get("name")])',
        (f"{CLI_FILES}::test_a_message_edited_in_the_file_is_stored_when_ingested_again",),
        "an ingest id holds the text: an edited message is not taken for the stored one",
    ),
    Mutant(
        "ingest-thread-name",
        "sgmem/files.py",
        '            if t is None:  # no thread named: --thread, else "default"',
        '            if not t:  # no thread named: --thread, else "default"',
        (f"{CLI_FILES}::test_a_jsonl_thread_that_is_not_a_name_is_refused",),
        'a JSONL "thread" of 0, false or "" is refused, not filed under "default"',
    ),
    Mutant(
        "ingest-threads-are-lists",
        "sgmem/files.py",
        "            if not isinstance(v, list):\n",
        "            if False:\n",
        (f"{CLI_FILES}::test_a_thread_that_is_not_a_list_of_messages_is_refused",),
        "{thread: {...}} is a clear error, not a crash",
    ),
    Mutant(
        "ingest-limits-before-storing",
        "sgmem/cli.py",
        "            if k > cap_sents:\n",
        "            if False:\n",
        (f"{CLI_FILES}::test_a_file_whose_later_thread_breaks_a_limit_stores_nothing",),
        "a message over the sentence limit is refused before the first add",
    ),
    Mutant(
        "ingest-long-threads-split",
        "sgmem/cli.py",
        "            if part and (len(part) >= cap_msgs or n + k > cap_sents):\n",
        "            if False:\n",
        (f"{CLI_FILES}::test_a_thread_longer_than_one_add_exports_and_comes_back",),
        "a thread longer than one add is ingested in adds within the limits: its export comes back",
    ),
    Mutant(
        "json-output-escapes",
        "sgmem/cli.py",
        '    return _UNSAFE.sub(lambda m: f"\\\\u{ord(m.group()):04x}", text)',
        "    return text",
        (f"{CLI_FILES}::test_json_output_is_json_whatever_the_memories_hold",),
        "--json output is JSON whatever the text holds, and drives no terminal",
    ),
    Mutant(
        "cli-neutralise",
        "sgmem/cli.py",
        '    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)',
        "    return text",
        ("tests/unit/test_cli_data.py::test_threads_messages_and_forget",),
        "stored text printed by the CLI cannot drive the terminal",
    ),
    Mutant(
        "cli-reads-create-nothing",
        "sgmem/cli.py",
        '    if "://" not in path and not (Path(path) / DB_FILENAME).is_file():',
        "    if False:",
        ("tests/unit/test_cli_data.py::test_reading_a_store_that_does_not_exist_fails_and_creates_nothing",),
        "a command that only reads never creates a store at a mistyped path",
    ),
    # ------------------------------------------------------------ input validation
    Mutant(
        "names-no-control-characters",
        "sgmem/validate.py",
        "    if control is not None:  # a line break in a thread name would start a line of its own in a context block",
        "    if False:",
        ("tests/unit/test_context_forgery.py",),
        "a name written anew holds no control character or line break",
    ),
    Mutant(
        "text-no-nul",
        "sgmem/validate.py",
        '    if "\\x00" in value:\n        # refused on every backend',
        "    if False:\n        # refused on every backend",
        ("tests/unit/test_backend_inputs.py",),
        "message text with a NUL is refused (it would not replay as added)",
    ),
    # ------------------------------------------------------------ saved state, passwords
    Mutant(
        "saved-reopen-applications-text",
        "sgmem/saved.py",
        "    memory = Memory(target, config=config)",
        "    memory = Memory(url or path, config=config)",
        ("tests/unit/test_saved.py",),
        "a saved store is reopened with the application's own URL, never the saved text",
    ),
    Mutant(
        "saved-reopen-allow-list",
        "sgmem/saved.py",
        "        target = env_target if env_key == key else None\n    if target is None:",
        "        target = env_target if env_key == key else None\n    if target is None and False:",
        ("tests/unit/test_saved.py::test_a_store_neither_open_nor_allowed_is_not_connected_to",),
        "saved state reopens only a store the application opened or allowed",
    ),
    Mutant(
        "saved-url-without-password",
        "sgmem/saved.py",
        '    return {"store_url": without_passwords(target), "config": config}',
        '    return {"store_url": target, "config": config}',
        ("tests/integration/llama_index/test_li_saving.py",),
        "saved state holds a PostgreSQL URL without its password",
    ),
    Mutant(
        "saved-no-scope-key",
        "sgmem/saved.py",
        "            data[name] = None\n",
        "",
        ("tests/unit/test_saved.py::test_the_scope_key_is_never_saved_and_comes_back_from_the_environment",),
        "Config.pg_scope_key is never saved",
    ),
    Mutant(
        "conninfo-libpq-cross-check",
        "sgmem/targets.py",
        "    if not (_leaks(out, secrets) or left):",
        "    if True:",
        (f"{CONNINFO}::test_libpqs_own_reading_removes_a_password_the_text_rules_miss",),
        "libpq's own reading takes out a password the text rules missed",
    ),
    Mutant(
        "conninfo-percent-decoded-scrub",
        "sgmem/targets.py",
        "    found += [unquote(v) for v in found]\n",
        "",
        (f"{CONNINFO}::test_without_psycopg_a_percent_encoded_password_is_scrubbed_as_it_reads",),
        "a percent-encoded password is scrubbed decoded too",
    ),
    Mutant(
        "conninfo-percent-encoded-keys",
        "sgmem/targets.py",
        "    return unquote(key).strip().lower() in _SECRET_KEYS",
        "    return key.strip().lower() in _SECRET_KEYS",
        (CONNINFO,),
        "a password parameter spelled pass%77ord= is a password",
    ),
    # ------------------------------------------------------------ the inspector and the MCP server
    Mutant(
        "ui-host-check",
        "sgmem/ui/guard.py",
        "        if host not in self.hosts:",
        "        if False:",
        (f"{UI_PAGES}::test_a_foreign_host_is_refused",),
        "the inspector answers only its own Host (DNS rebinding)",
    ),
    Mutant(
        "ui-origin-check",
        "sgmem/ui/guard.py",
        "        elif origin is not None and origin.lower() not in self.origins:",
        "        elif False:",
        (f"{UI_PAGES}::test_a_foreign_origin_is_refused_and_a_local_one_answered",),
        "the inspector refuses another site's Origin (cross-site forms)",
    ),
    Mutant(
        "ui-write-token",
        "sgmem/ui/app.py",
        "            if not token_ok(token, given):",
        "            if False:",
        (f"{UI_PAGES}::test_writes_need_the_token",),
        "every write of the inspector needs the run's token",
    ),
    Mutant(
        "ui-read-only-routes",
        "sgmem/ui/app.py",
        "    if write:\n",
        "    if True:\n",
        (f"{UI_PAGES}::test_read_only_has_no_write_route",),
        "a read-only inspector has no route that writes",
    ),
    Mutant(
        "mcp-http-token",
        "sgmem/mcp.py",
        '            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self.token):',
        "            if False:",
        ("tests/integration/mcp/test_mcp_setup.py::test_http_on_any_address_checks_host_origin_and_the_token",),
        "the MCP server over HTTP answers only the bearer of its token",
    ),
    Mutant(
        "mcp-read-only-tools",
        "sgmem/mcp.py",
        '    if not read_only:\n        server.tool(\n            name="forget",',
        '    if True:\n        server.tool(\n            name="forget",',
        ("tests/integration/mcp/test_mcp_cli.py",),
        "a read-only MCP server offers no tool that forgets",
    ),
    # ------------------------------------------------------------ evaluation
    Mutant(
        "lme-repeated-session-thread",
        "sgmem/eval/longmemeval.py",
        '            mem.add(msgs, scope="q", thread=sid, at=at)',
        '            mem.add(msgs, scope="q", thread=q.session_ids.get(sid, sid), at=at)',
        (
            "tests/unit/test_eval_longmemeval.py::test_a_session_drawn_twice_into_a_haystack_is_stored_twice_and_scored_as_one",
        ),
        "a LongMemEval session drawn twice is stored as two conversations",
    ),
    Mutant(
        "ablation-question-folds",
        "benchmarks/ablation.py",
        "        pick = best(lambda s, g, f=f: fold_of.get(g) != f, lme_src)",
        "        pick = best(lambda s, g, f=f: True, lme_src)",
        ("tests/benchmarks/test_ablation_part.py::test_each_question_fold_chooses_without_its_own_questions",),
        "each LongMemEval question fold chooses without its own questions (held out means held out)",
    ),
)
