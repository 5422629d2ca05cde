"""roundtrim report, the command's report on round logs: `python3 -m roundtrim_report LOG`
(`roundtrim report` runs it so). Its modules: cli (the command line, and which report it asks
for), roundlog (the log read into processes), checks (the kinds of a record's fields), table
(the text report), json_report (--json), html (the one-page report), plot (--png), sites (the
allocation sites that grow), diagnosis (why memory grows), symbols (names for native frames),
text (what reaches a terminal or a plot), stats (the least-squares line), common (what they
share: the command's name, MiB figures, the trend per round)."""
