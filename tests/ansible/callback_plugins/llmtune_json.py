# SPDX-License-Identifier: GPL-2.0-or-later
# A stdout callback for the tests: every task's (and handler's) result per host as one JSON
# document at the end. ansible-core ships no JSON callback (that one is in ansible.posix).
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = '''
    name: llmtune_json
    type: stdout
    short_description: task results as one JSON document (llmtune's tests)
    description:
      - Prints one JSON document, plays with their tasks and each host's result.
'''

import json

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'stdout'
    CALLBACK_NAME = 'llmtune_json'

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.plays = []

    def v2_playbook_on_play_start(self, play):
        self.plays.append({'play': {'name': play.get_name()}, 'tasks': []})

    def _record(self, result, **flags):
        r = dict(result._result)
        r.update(flags)
        tasks = self.plays[-1]['tasks']
        name = result._task.get_name()
        if not tasks or tasks[-1]['task']['name'] != name:
            tasks.append({'task': {'name': name}, 'hosts': {}})
        tasks[-1]['hosts'][result._host.get_name()] = r

    def v2_runner_on_ok(self, result):
        self._record(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, failed=True)

    def v2_runner_on_skipped(self, result):
        self._record(result, skipped=True)

    def v2_runner_on_unreachable(self, result):
        self._record(result, unreachable=True)

    def v2_playbook_on_stats(self, stats):
        self._display.display(json.dumps({'plays': self.plays}, default=str))
