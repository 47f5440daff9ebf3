"""Arabic pages write numbers as every other part of Queuewatch does (``queues/quantities.py``):
Western digits, "." before decimals and "," between thousands. Django's Arabic formats put
"," before decimals and "." between thousands, so a ``floatformat`` beside a ``{% num %}`` would
read 0,5 next to 1,200 on the same page."""

DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
# Dates as the rest of the product writes them: numeric, year first.
DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
TIME_FORMAT = "H:i"
