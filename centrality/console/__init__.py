"""`centrality console`: the fleet, incidents, jobs and timelines in a browser, and operators'
commands, served by this process.

It reads what `centrality nodes`/`jobs`/`incidents` read (the status topic through
`centrality.fleet`, incidents and commands through `centrality.client`, timelines from
ClickHouse), and signs commands with the key of the person who runs it: the page never sees it.
"""
