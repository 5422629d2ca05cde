# The Prometheus rules (deploy/prometheus/): promtool checks them and runs their unit tests, a
# firing and a quiet case for each alert. Part of make check; skipped, saying so, without
# promtool (Debian's prometheus package has it; scripts/tools/install-deps installs it).
PROM_RULES      := deploy/prometheus/roundtrim.rules.yml
PROM_RULE_TESTS := deploy/prometheus/roundtrim.rules.test.yml

.PHONY: prometheus-rules
prometheus-rules:
	@if command -v promtool >/dev/null 2>&1; then \
	    promtool check rules $(PROM_RULES) && promtool test rules $(PROM_RULE_TESTS); \
	else \
	    echo "prometheus-rules: SKIPPED: promtool is not installed (apt-get install prometheus)"; \
	fi

check: prometheus-rules
