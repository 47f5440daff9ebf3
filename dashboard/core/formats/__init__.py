"""Django's number and date formats where they differ from Queuewatch's one style
(docs/arabic-glossary.md, "Numbers, dates and units")."""
