# Admin registrations of the dashboard app's feature packages (autodiscovery imports this module).
from dashboard.accounts import admin as accounts_admin  # noqa: F401
from dashboard.actions import admin as actions_admin  # noqa: F401
