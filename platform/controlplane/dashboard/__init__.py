"""Mounting the Dash dashboard (webui) inside the control plane, behind the console's login."""
