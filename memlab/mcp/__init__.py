"""memlab as MCP tools for a host agent, on the official ``mcp`` Python SDK (needs ``memlab[mcp]``).

- Servers (:mod:`memlab.mcp.servers`): ``memory`` (search, add, history, notifications_list; one user
  per connection), ``datetime`` (``now``) and ``semantic`` (``query`` over ingested documents). Each is served
  over a WebSocket at ``/mcp`` with ``GET /health`` (:func:`create_mcp_app`) or over stdio (:func:`serve_stdio`);
  ``memlab mcp serve KIND`` runs them. ``web.search`` is left out: memlab's machines have no internet.
- :func:`websocket_client`: a client transport for :class:`mcp.Client` over that WebSocket.
- :class:`MCPRegistry`: connects to several servers, namespaces their tools (``memory.search``, ``time.now``,
  ``vector.query``), gives them to a model (:meth:`~MCPRegistry.to_llm_tools`) and routes calls with retries.
- :func:`run_turn_stepper`: the strict single-tool agent loop over memlab's LLM clients.
"""

from __future__ import annotations

from memlab.mcp.app import create_mcp_app, serve_stdio
from memlab.mcp.registry import MCPRegistry, RegisteredTool, ServerSpec, ToolResult
from memlab.mcp.servers import DEFAULT_NAMESPACES, SERVER_KINDS, make_server
from memlab.mcp.stepper import AGENT_SYSTEM_PROMPT, CORRECTIVE_PROMPT, Step, TurnResult, run_turn_stepper
from memlab.mcp.tools import ToolSpec, build_server
from memlab.mcp.transport import websocket_client

__all__ = [
    "AGENT_SYSTEM_PROMPT",
    "CORRECTIVE_PROMPT",
    "DEFAULT_NAMESPACES",
    "MCPRegistry",
    "RegisteredTool",
    "SERVER_KINDS",
    "ServerSpec",
    "Step",
    "ToolResult",
    "ToolSpec",
    "TurnResult",
    "build_server",
    "create_mcp_app",
    "make_server",
    "run_turn_stepper",
    "serve_stdio",
    "websocket_client",
]
