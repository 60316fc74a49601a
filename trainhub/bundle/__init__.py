"""The bundle: the code snapshot every rank of a job runs.

``compile`` turns a notebook (or script) and the workspace around it into a bundle when a job
is submitted; ``layout`` names the bundle's files and holds the plain readers a rank uses,
free of pydantic so that a rank reaches its first cell as soon as the interpreter is up.
"""
