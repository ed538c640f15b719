"""`python -m streams worker`: Faust's command line over the app `create_app()` builds, which
`centrality streams` runs (`faust -A` would need an app made at import)."""

from streams.faust.app import create_app

if __name__ == "__main__":
    create_app().main()
