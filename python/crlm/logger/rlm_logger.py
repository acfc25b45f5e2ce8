# SPDX-License-Identifier: MIT
# python/crlm/logger/rlm_logger.py -- RLMLogger, the reference library's trajectory
# logger: each completion's trajectory in the reference's JSONL format
# (one "metadata" line, then one "iteration" line per root turn), which
# the reference's visualiser opens.
#
# The JSONL is made by the C side (the store's exporter, as `rlm runs
# export` writes it); this class keeps it in memory and, with log_dir,
# writes it to {file_name}_{YYYY-mm-dd_HH-MM-SS}_{uuid8}.jsonl: the
# metadata line once, then the iteration lines of every completion.
import datetime
import json
import os
import threading
import uuid


class RLMLogger:
    def __init__(self, log_dir=None, file_name='rlm'):
        self.log_dir = log_dir
        self.file_name = file_name
        self.log_file_path = None
        self._lock = threading.Lock()
        self._metadata_written = False
        self._last = None
        if log_dir is not None:
            os.makedirs(log_dir, exist_ok=True)
            stamp = datetime.datetime.now().strftime('%Y-%m-%d_%H-%M-%S')
            self.log_file_path = os.path.join(
                log_dir, '%s_%s_%s.jsonl' % (file_name, stamp, uuid.uuid4().hex[:8]))

    def get_trajectory(self):
        """The last completion's {"run_metadata", "iterations"}, or None."""
        return self._last

    def _record(self, jsonl):
        """Keep one completion's JSONL; returns its metadata dict. Called
        from the completions' threads: the file gets one metadata line
        however many completions end at once."""
        meta, iterations, lines = None, [], []
        for line in (jsonl or '').splitlines():
            if not line.strip():
                continue
            obj = json.loads(line)
            if obj.get('type') == 'metadata':
                meta = obj
            elif obj.get('type') == 'iteration':
                iterations.append(obj)
            lines.append((obj.get('type') == 'metadata', line))
        traj = {'run_metadata': meta, 'iterations': iterations}
        with self._lock:
            # the check and the write in one step
            self._last = traj
            if self.log_file_path is not None:
                with open(self.log_file_path, 'a', encoding='utf-8') as f:
                    for is_meta, line in lines:
                        if not (is_meta and self._metadata_written):
                            f.write(line + '\n')
                if meta is not None:
                    self._metadata_written = True
        return traj

    def __repr__(self):
        return 'RLMLogger(log_dir=%r, file_name=%r)' % (self.log_dir, self.file_name)
