"""Method dispatch: JSON-RPC methods to definitions, one place for errors."""
