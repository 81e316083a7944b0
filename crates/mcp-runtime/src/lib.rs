//! mcp-runtime
