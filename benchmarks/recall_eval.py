"""An evaluation set of our own for MCP ``recall`` (issue 50 item 4): a courier platform team's agent
memory, written once as an MCP memory-server file and a decision log, and questions in four groups.

The memory was written before any question was run against it, in the style real agents write:
abbreviations (PG, k8s, SLO, p99), misspellings in observations, German, Spanish and French words,
relation names in snake_case, and a decision log over seven weeks. The questions:

- **natural**: what a person asks in the words that come to mind; most share a word with the answer.
- **paraphrase**: the same needs asked with no content word of the answer's text (only meaning links
  them: a keyword index cannot find these, an embedder might).
- **misspelled**: the key word of the question mistyped, the way people type names and tools.
- **non-English**: German, Spanish and French questions about the same memory.

Each question names the entities a good answer contains (an entity name, or ``decision:<id>``).
"""

from __future__ import annotations

import os

import orjson

ENTITIES = [
    # people
    ("Ingrid Solberg", "person", ["Engineering manager of the dispatch team", "Based in Oslo, speaks Norwegian and German",
                                 "Approves every schema change to the orders DB"]),
    ("Tomás Ferreira", "person", ["Senior backend engineer, owns the routing engine",
                                  "Wrote the first version of the ETA predictor in Go", "Prefers Postgres over Mongo"]),
    ("Mei Tanaka", "person", ["SRE, primary on-call for the payments cluster in December",
                              "Migrated the alerting from Nagios to Prometheus + Alertmanager"]),
    ("Lukas Brandt", "person", ["Mobile lead (iOS + Android)", "Arbeitet von Berlin aus",
                                "Pushes for offline-first in the courier app"]),
    ("Amara Okafor", "person", ["Data engineer, maintains the nightly ETL into the warehouse",
                                "Knows the Snowflake billing quirks"]),
    ("Julien Moreau", "person", ["Security engineer", "Runs the quarterly pentest with an external vendor",
                                 "Rotates the signing keys"]),
    ("Sofia Lindqvist", "person", ["Product manager for merchant onboarding", "Former courier herself",
                                   "Runs the merchant advisory board every month"]),
    ("Raj Patel", "person", ["Contractor, frontend (React) for the merchant dashboard", "Contract ends in March"]),
    ("Elena Petrova", "person", ["Head of customer support", "Escalation contact for refunds over 500 EUR"]),
    # teams
    ("Dispatch Team", "team", ["Assigns orders to couriers in real time", "Standup 09:30 CET", "Slack #dispatch"]),
    ("Payments Team", "team", ["Owns checkout, refunds and courier payouts", "Slack #payments-eng"]),
    ("Platform Team", "team", ["Runs k8s, CI and the observability stack", "Slack #platform"]),
    # services
    ("Routing Engine", "service", ["Computes courier routes with OSRM", "Written in Go",
                                   "p99 latency SLO 250 ms", "Caches road graph tiles in Redis"]),
    ("ETA Predictor", "service", ["Gradient boosted model predicting delivery time",
                                  "Retrained weekly on the last 90 days of deliveries",
                                  "Drifts during snowfall: predictions too optimistic"]),
    ("Checkout Service", "service", ["Takes customer payments through Stripe",
                                     "Idempotency keys on every charge", "Python 3.12, FastAPI"]),
    ("Refund Service", "service", ["Issues full and partial refunds", "Refunds above 500 EUR need a human approval",
                                   "Batch job runs at 02:00 UTC"]),
    ("Payout Service", "service", ["Pays couriers weekly via SEPA transfers", "Uses Adyen for payouts in Spain"]),
    ("Courier App", "app", ["React Native app used by couriers", "Works offline, syncs when back online",
                            "Crash rate 0.4% on Android"]),
    ("Merchant Dashboard", "app", ["Web app where restaurants manage menus and opening hours",
                                   "Built with React and TypeScript"]),
    ("Notification Service", "service", ["Sends push, SMS and e-mail", "SMS through Twilio",
                                         "Rate limited to 50 msgs/sec per tenant"]),
    # data stores
    ("Orders DB", "datastore", ["PostgreSQL 16 on RDS", "Logical replication to the analytics replica",
                                "Vacuum tuned after the bloat incident in October"]),
    ("Redis Cluster", "datastore", ["Redis 7, three shards", "Holds sessions, rate limits and route tiles",
                                    "Eviction policy allkeys-lru"]),
    ("Data Warehouse", "datastore", ["Snowflake", "Loaded nightly by the ETL", "Finance reads revenue reports from it"]),
    ("Kafka", "datastore", ["Event bus between dispatch, payments and notifications",
                            "Retention 7 days", "Topics are named domain.entity.event"]),
    # vendors
    ("Stripe", "vendor", ["Card payments and Apple Pay / Google Pay", "Webhooks verified with the signing secret"]),
    ("Adyen", "vendor", ["Payout provider for Spain and Portugal", "Contract renewal in Q2"]),
    ("Twilio", "vendor", ["SMS provider", "Costs spiked in November because of OTP retries"]),
    ("PagerDuty", "vendor", ["On-call paging", "Escalation after 10 min without ack"]),
    ("Secura Labs", "vendor", ["External pentest firm", "Last report found an IDOR in the merchant API"]),
    # incidents
    ("INC-2041", "incident", ["Double charges at checkout after a Stripe webhook retry storm",
                              "Root cause: missing idempotency key on the retry path", "Duration 47 min"]),
    ("INC-2057", "incident", ["Routing Engine timeouts during the Black Friday peak",
                              "Redis evicted the route tiles; cold cache", "Mitigated by scaling shards"]),
    ("INC-2063", "incident", ["Couriers not paid on Friday", "SEPA file rejected by the bank: wrong IBAN checksum",
                              "Payouts re-sent Monday"]),
    ("INC-2070", "incident", ["Orders DB disk full from table bloat", "Autovacuum could not keep up",
                              "Writes failed for 12 min"]),
    # runbooks, policies, projects, regions, customers
    ("Runbook: Failover Orders DB", "runbook", ["Promote the replica with the RDS console",
                                                "Update the DNS CNAME, then restart the API pods"]),
    ("Runbook: Rotate Stripe Keys", "runbook", ["Create the new restricted key first",
                                                "Deploy, then revoke the old key after 24 h"]),
    ("Data Retention Policy", "policy", ["Delete courier GPS traces after 30 days (GDPR)",
                                         "Keep invoices 10 years for the tax office"]),
    ("On-call Policy", "policy", ["One week shifts, handover on Mondays",
                                  "Compensation: a day off after a night page"]),
    ("Project Nordlicht", "project", ["Expansion to Norway and Sweden in spring",
                                      "Needs Vipps and Swish as payment methods"]),
    ("Project Zero Waste", "project", ["Reusable packaging pilot with 20 restaurants in Hamburg"]),
    ("Region Iberia", "region", ["Madrid, Barcelona, Lisbon", "Reparto en bicicleta y moto",
                                 "Payouts through Adyen"]),
    ("Region DACH", "region", ["Berlin, Hamburg, Munich, Vienna, Zurich", "Largest region by orders"]),
    ("Pizzeria Bella Napoli", "customer", ["Merchant since 2023", "Complained about late deliveries in Hamburg",
                                           "Uses the merchant dashboard daily"]),
    ("Café Lumière", "customer", ["Merchant in Lyon", "Commandes surtout le matin", "Pilot for the French launch"]),
    # tools
    ("Terraform", "tool", ["Infrastructure as code for AWS", "State in S3 with DynamoDB locking"]),
    ("Grafana", "tool", ["Dashboards for SLOs", "Alert rules live next to the dashboards"]),
    ("Feature Flags", "tool", ["LaunchDarkly", "Every risky change ships behind a flag"]),
]

RELATIONS = [
    ("Ingrid Solberg", "Dispatch Team", "manages"), ("Tomás Ferreira", "Routing Engine", "owns"),
    ("Tomás Ferreira", "ETA Predictor", "wrote"), ("Mei Tanaka", "Platform Team", "member_of"),
    ("Mei Tanaka", "PagerDuty", "on_call_via"), ("Lukas Brandt", "Courier App", "leads"),
    ("Amara Okafor", "Data Warehouse", "maintains"), ("Julien Moreau", "Secura Labs", "works_with"),
    ("Julien Moreau", "Runbook: Rotate Stripe Keys", "wrote"), ("Sofia Lindqvist", "Merchant Dashboard", "product_owner_of"),
    ("Raj Patel", "Merchant Dashboard", "builds"), ("Elena Petrova", "Refund Service", "approves_large_refunds_in"),
    ("Payments Team", "Checkout Service", "owns"), ("Payments Team", "Refund Service", "owns"),
    ("Payments Team", "Payout Service", "owns"), ("Dispatch Team", "Routing Engine", "owns"),
    ("Dispatch Team", "ETA Predictor", "owns"), ("Platform Team", "Redis Cluster", "operates"),
    ("Platform Team", "Kafka", "operates"), ("Platform Team", "Terraform", "uses"),
    ("Checkout Service", "Stripe", "charges_through"), ("Checkout Service", "Orders DB", "writes_to"),
    ("Refund Service", "Stripe", "refunds_through"), ("Payout Service", "Adyen", "pays_through"),
    ("Notification Service", "Twilio", "sends_sms_via"), ("Routing Engine", "Redis Cluster", "caches_in"),
    ("ETA Predictor", "Data Warehouse", "trains_on"), ("Courier App", "Notification Service", "receives_push_from"),
    ("INC-2041", "Checkout Service", "affected"), ("INC-2057", "Routing Engine", "affected"),
    ("INC-2057", "Redis Cluster", "caused_by"), ("INC-2063", "Payout Service", "affected"),
    ("INC-2070", "Orders DB", "affected"), ("Mei Tanaka", "INC-2070", "responded_to"),
    ("Tomás Ferreira", "INC-2057", "responded_to"), ("Project Nordlicht", "Payments Team", "needs"),
    ("Pizzeria Bella Napoli", "Region DACH", "located_in"), ("Café Lumière", "Merchant Dashboard", "uses"),
    ("Region Iberia", "Adyen", "paid_out_by"), ("Grafana", "Routing Engine", "monitors"),
]

DECISIONS = [  # (id, timestamp, what, why, alternatives, entities, category)
    ("d01", "2026-10-19T09:00:00Z", "Move route tile caching from in-process memory to the Redis cluster",
     "Pods restart often and lose the cache; a shared cache warms once", ["bigger pods", "Memcached"],
     ["Routing Engine", "Redis Cluster"], "architecture"),
    ("d02", "2026-10-21T14:30:00Z", "Require an idempotency key on every Stripe call, retries included",
     "INC-2041 charged customers twice when webhooks retried", ["dedupe charges in a nightly job"],
     ["Checkout Service", "Stripe", "INC-2041"], "reliability"),
    ("d03", "2026-10-27T10:00:00Z", "Tune autovacuum on the orders table and alert on dead tuples",
     "Bloat filled the disk in INC-2070", ["bigger disk", "partition the table"], ["Orders DB", "INC-2070"], "operations"),
    ("d04", "2026-11-02T11:15:00Z", "Use Adyen for courier payouts in Spain and Portugal",
     "SEPA instant is not offered by our bank there; Adyen pays in one day", ["Wise", "local bank"],
     ["Payout Service", "Adyen", "Region Iberia"], "vendor"),
    ("d05", "2026-11-04T16:00:00Z", "Keep the ETA predictor as gradient boosting, add a snowfall feature",
     "A neural model was 3% better but three times the cost to serve", ["LSTM model", "linear regression"],
     ["ETA Predictor"], "ml"),
    ("d06", "2026-11-09T09:45:00Z", "Validate the IBAN checksum before building the SEPA payout file",
     "The bank rejected the whole file in INC-2063 because of one wrong IBAN", ["validate at signup only"],
     ["Payout Service", "INC-2063"], "reliability"),
    ("d07", "2026-11-11T13:00:00Z", "Couriers app stays React Native, no rewrite in Kotlin/Swift",
     "Two platforms with one mobile team of four; crash rate is acceptable", ["native rewrite", "Flutter"],
     ["Courier App", "Lukas Brandt"], "mobile"),
    ("d08", "2026-11-16T10:30:00Z", "Retry OTP SMS at most twice and fall back to e-mail",
     "Twilio costs spiked from unbounded OTP retries", ["switch SMS vendor"], ["Notification Service", "Twilio"], "cost"),
    ("d09", "2026-11-18T15:00:00Z", "Scale Redis to three shards and set allkeys-lru",
     "Black Friday evicted route tiles and timed out routing (INC-2057)", ["bigger single node"],
     ["Redis Cluster", "INC-2057"], "operations"),
    ("d10", "2026-11-23T09:00:00Z", "Refunds above 500 EUR need approval by support leadership",
     "Fraud ring abused partial refunds in November", ["block partial refunds"],
     ["Refund Service", "Elena Petrova"], "policy"),
    ("d11", "2026-11-25T11:00:00Z", "Vipps and Swish via Adyen for Project Nordlicht",
     "Adyen already pays out in Iberia; one contract for both", ["direct Vipps integration"],
     ["Project Nordlicht", "Adyen"], "vendor"),
    ("d12", "2026-11-30T14:00:00Z", "Delete courier GPS traces after 30 days",
     "GDPR data minimisation; disputes older than 30 days use delivery photos", ["keep 90 days"],
     ["Data Retention Policy"], "compliance"),
    ("d13", "2026-12-01T10:00:00Z", "Merchant dashboard moves to server-side rendering",
     "Slow first load on restaurant tablets", ["keep the SPA"], ["Merchant Dashboard", "Raj Patel"], "frontend"),
    ("d14", "2026-12-02T16:30:00Z", "Quarterly pentest stays with Secura Labs for 2027",
     "They found the IDOR that two other firms missed", ["rotate vendors yearly"],
     ["Secura Labs", "Julien Moreau"], "security"),
    ("d15", "2026-12-04T09:30:00Z", "Hand over on-call on Mondays and give a day off after a night page",
     "Two SREs burned out in November", ["follow-the-sun rotation"], ["On-call Policy", "Mei Tanaka"], "people"),
]

# (group, question, expected entities)
QUESTIONS = [
    # natural
    ("natural", "who owns the routing engine?", ["Tomás Ferreira", "Dispatch Team"]),
    ("natural", "why were customers charged twice?", ["INC-2041", "decision:d02"]),
    ("natural", "which vendor pays couriers in Spain", ["Adyen", "decision:d04"]),
    ("natural", "what happened on Black Friday", ["INC-2057"]),
    ("natural", "who approves big refunds", ["Elena Petrova", "decision:d10"]),
    ("natural", "how long do we keep GPS data", ["Data Retention Policy", "decision:d12"]),
    ("natural", "who is on call for payments", ["Mei Tanaka"]),
    ("natural", "what did we decide about the ETA model", ["decision:d05"]),
    ("natural", "why did the orders database run out of disk", ["INC-2070", "decision:d03"]),
    ("natural", "which SMS provider do we use", ["Twilio"]),
    ("natural", "how do I fail over the orders db", ["Runbook: Failover Orders DB"]),
    ("natural", "who does our penetration tests", ["Secura Labs"]),
    ("natural", "what payment methods does the Norway launch need", ["Project Nordlicht", "decision:d11"]),
    ("natural", "which restaurant complained about late deliveries", ["Pizzeria Bella Napoli"]),
    ("natural", "what did we decide recently about on-call", ["decision:d15"]),
    ("natural", "who leads the mobile app", ["Lukas Brandt"]),
    ("natural", "where do route tiles get cached", ["Redis Cluster", "decision:d01"]),
    ("natural", "why was the SEPA payout file rejected", ["INC-2063", "decision:d06"]),
    ("natural", "latest decision about the merchant dashboard", ["decision:d13"]),
    ("natural", "who maintains the data warehouse", ["Amara Okafor"]),
    # paraphrase: no content word of the answer's text
    ("paraphrase", "who keeps the lights on for Kubernetes", ["Platform Team"]),
    ("paraphrase", "money sent back to shoppers", ["Refund Service"]),
    ("paraphrase", "the firm that hacks us on purpose", ["Secura Labs"]),
    ("paraphrase", "when were riders left without wages", ["INC-2063"]),
    ("paraphrase", "estimating arrival time badly in winter weather", ["ETA Predictor"]),
    ("paraphrase", "text message bill went up", ["Twilio", "decision:d08"]),
    # misspelled key words
    ("misspelled", "Lindqvst", ["Sofia Lindqvist"]),
    ("misspelled", "Reddis evictions", ["Redis Cluster", "INC-2057", "decision:d09"]),
    ("misspelled", "who owns the Stirpe integration", ["Stripe", "Checkout Service"]),
    ("misspelled", "Pagerduty escalaton", ["PagerDuty"]),
    ("misspelled", "Nordlict", ["Project Nordlicht"]),
    ("misspelled", "idempotancy key", ["decision:d02", "Checkout Service"]),
    ("misspelled", "teraform state", ["Terraform"]),
    ("misspelled", "Tanka on-call", ["Mei Tanaka"]),
    # non-English
    ("non-English", "Wer arbeitet von Berlin aus?", ["Lukas Brandt"]),
    ("non-English", "reparto en bicicleta", ["Region Iberia"]),
    ("non-English", "commandes le matin", ["Café Lumière"]),
    ("non-English", "Warum wurde die Festplatte voll?", ["INC-2070"]),
    ("non-English", "¿quién paga a los repartidores en España?", ["Adyen", "Payout Service"]),
    ("non-English", "Wer ist Ingrid Solberg?", ["Ingrid Solberg"]),
]
GROUPS = ("natural", "paraphrase", "misspelled", "non-English")


def write_memory_file(path: str) -> None:
    """The MCP memory server's file: entities first, then relations (its own order)."""
    with open(path, "wb") as out:
        for name, kind, observations in ENTITIES:
            out.write(orjson.dumps({"type": "entity", "name": name, "entityType": kind,
                                    "observations": observations}) + b"\n")
        for source, target, kind in RELATIONS:
            out.write(orjson.dumps({"type": "relation", "from": source, "to": target, "relationType": kind}) + b"\n")


def decision_uuid(short: str) -> str:
    return f"00000000-0000-4000-8000-0000000000{short[1:]:>02}"


def write_decision_log(path: str) -> None:
    """The decision log, oldest first, in the shape `import jsonl-log` reads (docs/import.md)."""
    with open(path, "wb") as out:
        for short, timestamp, what, why, alternatives, entities, category in DECISIONS:
            out.write(orjson.dumps({
                "id": decision_uuid(short), "type": "decision",
                "content": {"what": what, "why": why, "alternatives": alternatives},
                "entities": entities, "identity": {"user_id": "agent", "agent_id": "claude-code"},
                "metadata": {"timestamp": timestamp, "category": category, "importance": "high"}}) + b"\n")


def expected_keys(expected: list[str]) -> list[str]:
    """The recall ``entity`` field of each expected answer (a decision by its imported name)."""
    return [f"decision:{decision_uuid(e.split(':', 1)[1])}" if e.startswith("decision:") else e for e in expected]


def write_store_inputs(directory: str) -> tuple[str, str]:
    memory, log = os.path.join(directory, "memory.jsonl"), os.path.join(directory, "decisions.jsonl")
    write_memory_file(memory)
    write_decision_log(log)
    return memory, log
