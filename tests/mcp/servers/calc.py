"""An MCP server built with the official SDK, which the tests run as a subprocess.

``python -m tests.mcp.servers.calc --http PORT`` serves Streamable HTTP on 127.0.0.1:PORT/mcp;
``python -m tests.mcp.servers.calc`` serves stdio. ``CALC_LEDGER`` names a file that ``charge`` appends
to, so a test can count how often the tool really ran.
"""

import argparse
import os
import time

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers on the remote server."""
    return a + b


@server.tool()
def weather(city: str) -> str:
    """Tell the weather in a city."""
    return f"Sunny in {city}"


@server.tool()
def whoami(ctx: Context) -> str:
    """Tell which user the request's headers name, and which process answers."""
    headers = ctx.headers or {}
    return f"user={headers.get('x-user', '-')} pid={os.getpid()}"


@server.tool()
def fail(reason: str) -> str:
    """Always fail with the reason given."""
    raise ValueError(reason)


@server.tool()
def nap(seconds: float) -> str:
    """Sleep, then answer (to test timeouts)."""
    time.sleep(seconds)
    return "rested"


@server.tool()
def charge(account: str, amount: int) -> str:
    """Charge an account (the site gates this one)."""
    with open(os.environ["CALC_LEDGER"], "a") as ledger:
        ledger.write(f"{account} {amount} {os.getpid()}\n")
    return f"charged {amount} to {account}"


@server.tool()
def secret() -> str:
    """A tool the site does not allow."""
    return "classified"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, help="serve Streamable HTTP on this port instead of stdio")
    options = parser.parse_args()
    if options.http:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
    else:
        server.run("stdio")
