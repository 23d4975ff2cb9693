"""The network edge: listener and connections (asyncio), dispatcher, one handler module per API."""
