"""The HTTP API under /api/v1: one flask-smorest blueprint per resource.

``registry.init_api`` puts it on an app; ``errors`` maps every error to HTTP in one place;
``schemas`` validates requests and documents responses; ``reads`` answers the three read
endpoints before Flask's dispatch.
"""
