"""How a job's attempt ended, and what happens next: an exception's failure class
(``exceptions``), an attempt's verdict from its ranks' evidence (``verdict``), and whether,
when and how often to retry (``retry``)."""
