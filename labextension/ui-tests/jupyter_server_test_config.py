"""Server configuration for the Galata tests: a real JupyterLab with the trainhub server
extension on the local backend, in throw-away directories (see start-lab.sh)."""

import os

from jupyterlab.galata import configure_jupyter_server

c = get_config()  # noqa: F821 (provided by the config loader)
configure_jupyter_server(c)

c.ServerApp.jpserver_extensions.update({"trainhub_server": True})
c.ServerApp.root_dir = os.environ["TRAINHUB_UI_ROOT"]
# Quick state changes for the panel; the default is tuned for many users.
c.TrainhubExtension.reconcile_interval = 1.0
# Test containers often run as root; the server refuses that unless told.
c.ServerApp.allow_root = os.geteuid() == 0
