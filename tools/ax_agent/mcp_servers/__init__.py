"""MCP servers as tool sources for ax-agent (issue 23): config, client, model tools."""
