"""A planning tool agent that reads the tool list, plugged in by overriding a fixture.

Copy this file to ``conftest.py`` in your project's rootdir and run::

    pytest --budget-suite=planning --budget-task=dining --budget-query-count=3 \
        --budget-scenario=static@1 --budget-gate=off

Every turn the agent reads what it holds from the conversation (the travel time and
location the user gave, and each id a tool returned since the user's last message), reads
each tool's inputs, output and price from the tool list, searches for the cheapest sequence
of calls that reaches the goal, and makes the first call of it. Re-planning every turn makes
it follow price changes and removed tools; a tool that failed is not tried again.

It is a search algorithm, not a model: it does not read the user's request and gives every
preference the first value its parameter allows. Replace ``preference`` with a call to your
model to fill them in properly.
"""

import heapq
import json
import re

import pytest

PRICE = re.compile(r"Cost: ([0-9.]+)\. Output: (\w+)\.")
GIVEN = re.compile(r"\((TimeInfo|LocationPreference)\): (.+)")
RESULT = re.compile(r"succeeded\. (\w+): (\S+)$")
FAILED = re.compile(r"^\[ERROR\] (\w+):")


class RoutePlanner:
    name = "route-planner"  # the name shown in the table and the JSON report

    def act(self, observation):
        values, failed = self.read(observation.messages)
        if observation.goal in values:
            return f"<answer>{values[observation.goal]}</answer>"
        tools = {}  # name -> (price in cents, input types, output type)
        for tool in observation.tools:
            spec = tool["function"]
            price, output = PRICE.search(spec["description"]).groups()
            params = spec["parameters"]["properties"]
            for name, schema in params.items():
                if "enum" in schema and name not in values:
                    values[name] = self.preference(observation, name, schema["enum"])
            if spec["name"] not in failed:
                tools[spec["name"]] = (round(float(price) * 100), set(params), output)
        name = self.cheapest_route(tools, set(values), observation.goal)[0]
        arguments = json.dumps({param: values[param] for param in tools[name][1]})
        function = {"name": name, "arguments": arguments}
        tool_call = {"id": f"call_{observation.step + 1}", "type": "function", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [tool_call]}

    def preference(self, observation, parameter, allowed):
        return allowed[0]  # a real agent asks its model which value the request means

    @staticmethod
    def read(messages):
        """The values held (type -> value or id) and the tools that failed, from the chat."""
        given = dict(GIVEN.findall(messages[1]["content"]))
        values, failed = dict(given), set()
        for message in messages[2:]:
            text = message.get("content") or ""
            if message["role"] == "user":  # new requirements: earlier results are void
                values, failed = dict(given), set()
            elif message["role"] == "tool" and (found := RESULT.search(text)):
                values[found[1]] = found[2]
            elif message["role"] == "tool" and (found := FAILED.match(text)):
                failed.add(found[1])
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
