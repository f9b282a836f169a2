"""A planning tool agent that reads the tool list, plugged in by overriding a fixture.

Copy this file to ``conftest.py`` in your project's rootdir and run::

    pytest --budget-suite=planning --budget-task=dining --budget-query-count=3 \
        --budget-scenario=static@1 --budget-gate=off

Every turn the agent reads what it holds from the conversation (the TimeInfo and
LocationPreference tokens of the user's request, and the id each successful call returned
since the user's last message), reads each tool's inputs, output and price from the tool
list, searches for the cheapest sequence of calls that reaches the goal, and makes the first
call of it (only the first call of a turn runs). Re-planning every turn makes it follow price
changes and removed tools; a tool that failed is not tried again.

It is a search algorithm, not a model: it does not read the user's request and gives every
preference the first value its parameter allows. Replace ``preference`` with a call to your
model to fill them in properly.
"""

import heapq
import json
import re

import pytest

PRICE = re.compile(r"costs ([0-9.]+) units\. Output type: (\w+)\.")
GIVEN = re.compile(r"<(TimeInfo|LocationPreference)\d+>")
ID = re.compile(r"<[A-Za-z]+\d{5}>")


class RoutePlanner:
    name = "route-planner"  # the name shown in the table and the JSON report

    def act(self, observation):
        tools, outputs = {}, {}  # name -> (price in cents, input types, output type)
        for tool in observation.tools:
            spec = tool["function"]
            price, output = PRICE.search(spec["description"]).groups()
            outputs[spec["name"]] = output
            tools[spec["name"]] = (round(float(price) * 100), spec["parameters"]["properties"])
        values, failed = self.read(observation.messages, outputs)
        if observation.goal in values:
            return f"<answer> {values[observation.goal]} </answer>"
        usable = {}
        for name, (price, params) in tools.items():
            for param, schema in params.items():
                if "enum" in schema and param not in values:
                    values[param] = self.preference(observation, param, schema["enum"])
            if name not in failed:
                usable[name] = (price, set(params), outputs[name])
        name = self.cheapest_route(usable, set(values), observation.goal)[0]
        arguments = json.dumps({param: values[param] for param in usable[name][1]})
        function = {"name": name, "arguments": arguments}
        tool_call = {"id": f"call_{observation.step + 1}", "type": "function", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [tool_call]}

    def preference(self, observation, parameter, allowed):
        return allowed[0]  # a real agent asks its model which value the request means

    @staticmethod
    def read(messages, outputs):
        """The values held (type -> value or id) and the tools that failed, from the chat."""
        given = {}
        for message in messages:
            if message["role"] == "user":  # (a later user turn: new requirements)
                given.update((m[1], m[0]) for m in GIVEN.finditer(message["content"]))
        values, failed, called = dict(given), set(), None
        for message in messages[2:]:
            text = message.get("content") or ""
            if message["role"] == "user":  # new requirements: earlier results are void
                values, failed = dict(given), set()
            elif message["role"] == "assistant" and message.get("tool_calls"):
                called = message["tool_calls"][0]["function"]["name"]  # only the first runs
            elif message["role"] == "tool" and called is not None:
                if text.startswith("[ERROR]"):
                    failed.add(called)
                elif called in outputs:
                    values[outputs[called]] = ID.findall(text)[-1]
                called = None
        return values, failed

    @staticmethod
    def cheapest_route(tools, held, goal):
        """Uniform-cost search over sets of held types; ties go to fewer calls."""
        frontier = [(0, 0, [], frozenset(held))]
        done = set()
        while frontier:
            cents, calls, route, state = heapq.heappop(frontier)
            if goal in state:
                return route
            if state in done:
                continue
            done.add(state)
            for name, (price, inputs, output) in tools.items():
                if output not in state and inputs <= state:
                    step = (cents + price, calls + 1, [*route, name], state | {output})
                    heapq.heappush(frontier, step)
        raise RuntimeError(f"no sequence of tools reaches {goal}")


@pytest.fixture
def budget_tool_agent():
    return RoutePlanner()
