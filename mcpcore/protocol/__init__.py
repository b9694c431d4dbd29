"""On the wire: JSON-RPC envelopes, protocol revisions and their eras."""
