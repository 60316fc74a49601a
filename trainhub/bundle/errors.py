"""The one error of the bundle: a sentence that names the file, cell or field at fault."""


class BundleError(ValueError):
    """The notebook or its workspace cannot become a job, or a bundle file cannot be read."""
