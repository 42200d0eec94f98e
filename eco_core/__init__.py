"""The foundation every package imports: typed configuration, the error tree, redaction, the
camelCase wire base and page object, the page-size ceiling and the service's version. It imports
no other package of this project."""

__version__ = "0.1.0"
