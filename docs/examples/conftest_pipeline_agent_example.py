"""A tool agent in a dozen lines, plugged in by overriding the ``budget_tool_agent`` fixture.

Copy this file to ``conftest.py`` in your project's rootdir and run::

    pytest --budget-suite=planning --budget-task=dining --budget-query-count=3 \
        --budget-scenario=static@1 --budget-gate=off

The agent makes a single call to the tool that does the whole job (the composite named
``<Task>_Complete_<n>Steps_Pipeline``) and answers with the id it returns (or gives up if
the call failed). It copies the
travel time and the location from the user's message, and does not try to understand the
request: every preference gets the first value its parameter allows.
"""

import json
import re

import pytest


class PipelineAgent:
    name = "pipeline"  # the name shown in the table and the JSON report

    def act(self, observation):
        last = observation.messages[-1]
        if last["role"] == "tool":  # our call came back: "... succeeded. TravelDining: <id>"
            if "succeeded" not in last["content"]:
                return "The tool failed. I give up."  # no call, no answer: the episode ends
            return f"<answer>{last['content'].split()[-1]}</answer>"
        given = dict(re.findall(r"\((\w+)\): (.+)", observation.messages[1]["content"]))
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
