"""roundtrim report, the command's report on round logs: `python3 -m roundtrim_report LOG`
(`roundtrim report` runs it so). Its modules: diagnosis (why memory grows), sites (the
allocation sites that grow), symbols (names for native frames), html (the one-page report),
text (what reaches a terminal or a plot), stats (the least-squares line)."""
