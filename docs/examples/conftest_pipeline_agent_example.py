"""A tool agent in a dozen lines, plugged in by overriding the ``budget_tool_agent`` fixture.

Copy this file to ``conftest.py`` in your project's rootdir and run::

    pytest --budget-suite=planning --budget-task=dining --budget-query-count=3 \
        --budget-scenario=static@1 --budget-planning-keep-longest --budget-gate=off

The agent makes a single call to the tool that does the whole job (the composite named
``<Task>_Complete_<n>Steps_Pipeline``, which CostBench bans unless
``--budget-planning-keep-longest`` keeps it) and answers with the id it returns (or gives up
if the call failed). It copies the TimeInfo and LocationPreference tokens from the user's
message, and does not try to understand the request: every preference gets the first value
its parameter allows.
"""

import json
import re

import pytest


class PipelineAgent:
    name = "pipeline"  # the name shown in the table and the JSON report

    def act(self, observation):
        last = observation.messages[-1]
        if last["role"] == "tool":  # our call came back: "... <DiningCandidate00185>. Cost: X"
            if last["content"].startswith("[ERROR]"):
                return "The tool failed. I give up."  # no call, no answer: the episode ends
            final_id = re.findall(r"<\w+?\d{5}>", last["content"])[-1]
            return f"<answer> {final_id} </answer>"
        request = observation.messages[1]["content"]
        given = {m[1]: m[0] for m in re.finditer(r"<(TimeInfo|LocationPreference)\d+>", request)}
        specs = [tool["function"] for tool in observation.tools]
        pipeline = next(spec for spec in specs if "_Complete_" in spec["name"])
        params = pipeline["parameters"]["properties"]
        arguments = {p: given.get(p) or params[p]["enum"][0] for p in params}
        function = {"name": pipeline["name"], "arguments": json.dumps(arguments)}
        tool_call = {"id": "call_1", "type": "function", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [tool_call]}


@pytest.fixture
def budget_tool_agent():
    return PipelineAgent()
