"""fastai's ``this_tests`` (fastai.gen_doc.doctest) records which API a test covers for fastai's docs;
it checks nothing, so here it does nothing."""


def this_tests(*funcs):
    pass
