r"""A model behind an OpenAI-compatible Chat Completions endpoint as the planning tool agent.

Copy this file to ``conftest.py`` (a hook works from any conftest), point it at your
endpoint and run the suite with your model next to the greedy baseline::

    export MY_MODEL_BASE_URL=http://127.0.0.1:8000/v1   # up to and including the /v1
    export MY_MODEL=my-model                            # the model name the server expects
    export MY_MODEL_API_KEY=...                         # only if the server wants one
    pytest --budget-suite=planning --budget-agent=user,greedy --budget-gate=off

Each turn sends the conversation so far and the current tool list, exactly as the suite
hands them over, and returns the server's JSON answer unchanged: the suite reads the
assistant message (its text and tool calls) out of ``choices[0]``.
"""

import os

import httpx


class ChatCompletionsToolAgent:
    def __init__(self, base_url, model, api_key=None):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.name = model  # the name shown in the table and the JSON report
        self.model = model
        self.headers = {"authorization": f"Bearer {api_key}"} if api_key else {}

    def act(self, observation):
        request = {
            "model": self.model,
            "messages": observation.messages,  # system prompt, request, calls and results
            "tools": observation.tools,  # OpenAI function format; prices in the descriptions
            "temperature": 0,
        }
        response = httpx.post(self.url, json=request, headers=self.headers, timeout=120)
        response.raise_for_status()  # an exception ends this episode as an error
        return response.json()


def pytest_budget_tool_agent(config):
    base_url = os.environ.get("MY_MODEL_BASE_URL")
    if not base_url:
        return None  # not configured: the suite runs its reference agents instead
    model = os.environ.get("MY_MODEL", "my-model")
    return ChatCompletionsToolAgent(base_url, model, os.environ.get("MY_MODEL_API_KEY"))
