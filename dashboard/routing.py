from django.urls import path

import dashboard.web.converters  # noqa: F401  (registers the <seg:…> converter for queue segments)
from dashboard.live import consumers

queue = "ws/queue/<seg:connection>/<seg:prefix>/<seg:name>/"

websocket_urlpatterns = [
    path("ws/all/", consumers.LiveConsumer.as_asgi(), name="ws_all"),  # pages without live content of their own
    path("ws/overview/", consumers.OverviewConsumer.as_asgi(), name="ws_overview"),
    path(queue, consumers.QueueConsumer.as_asgi(), name="ws_queue"),
    path(queue + "jobs/<jobid:job_id>", consumers.JobConsumer.as_asgi(), name="ws_job"),
    path("ws/tasks/<int:task_id>/", consumers.TaskConsumer.as_asgi(), name="ws_task"),
]
urlpatterns = websocket_urlpatterns  # lets django.urls.reverse() build websocket paths for templates
