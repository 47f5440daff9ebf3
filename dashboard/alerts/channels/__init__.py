"""Notification channels (email, webhook…): their forms, pages and URLs under /alerts/channels/.

An absolute ``from channels…`` (Django Channels) inside dashboard/alerts still names the
top-level package: this one is ``dashboard.alerts.channels``."""
