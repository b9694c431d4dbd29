"""The wire layer: JSON-RPC envelopes, protocol revisions and their eras."""
