"""Sphinx configuration of the fattree documentation site.

Build: ``.venv/bin/python -m sphinx -W --keep-going -b html docs build/docs/html``
(``pip install -e '.[docs]'`` brings Sphinx, MyST and the theme).
"""

import inspect

import fattree

project = "fattree"
author = "the fattree authors"
copyright = "the fattree authors, BSD 2-Clause licence"
release = fattree.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = []

# MyST: the pages are GitHub Markdown first. Heading anchors let the pages' links to
# `page.md#a-heading` resolve the way GitHub resolves them; the depth covers every heading
# level the pages link to.
myst_heading_anchors = 4
# No warning type is suppressed. The pages name source files in code spans (`hdl/axis.py`),
# not as links: a Markdown link to a file that exists would be copied into the site as a
# download, and one to a file outside docs/ that is missing or a Markdown file (README.md,
# CONTRIBUTING.md) fails as myst.xref_missing, the same check that catches a broken link
# between pages, so it stays an error. README.md and CHANGELOG.md are pages through
# {include}, whose relative-docs option turns their `docs/page.md` links into page links.
# No MyST syntax extensions: the pages are plain GitHub Markdown, and an extension (definition
# lists, dollar math) would change how some of their lines render.
myst_enable_extensions = []

# Docstrings are numpydoc (docs/api.md says which objects the reference shows).
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_member_order = "bysource"
# Types go beside the parameters the docstrings describe, not as a second list of their own.
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"

html_theme = "furo"
html_title = f"fattree {release}"
html_static_path = []


def _constructor_signature(app, what, name, obj, options, signature, return_annotation):
    """The constructor's own parameters for Amaranth components.

    ``Elaboratable.__new__(cls, *args, src_loc_at=0, **kwargs)`` is what autodoc finds
    first, which would show every component as taking ``*args, **kwargs``.
    """
    if what != "class" or signature != "(*args, src_loc_at=0, **kwargs)":
        return None
    init = inspect.signature(obj.__init__)
    # Types are in the docstrings' Parameters sections; the strings of postponed
    # annotations would only clutter the signature.
    params = [p.replace(annotation=p.empty) for p in list(init.parameters.values())[1:]]
    return str(init.replace(parameters=params, return_annotation=init.empty)), None


def setup(app):
    app.connect("autodoc-process-signature", _constructor_signature)
