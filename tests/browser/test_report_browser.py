"""The report in a real (headless) browser: the file opens from disk with no server, and the
app's "Download report" button hands out the same page."""

from __future__ import annotations

import os

import pytest
from selenium.webdriver.common.by import By

from compiler_core.passes import resolve_pipeline
from graphlab.cli import main

from pane_helpers import wait_until

pytestmark = pytest.mark.browser


def pass_rows(driver):
    return driver.find_elements(By.CSS_SELECTOR, "table.passes tbody tr")


def test_the_report_opens_from_disk_and_shows_the_pass_tables(dash_duo, tmp_path):
    out = tmp_path / "teach_conv_bn_report.html"
    assert main(["report", "teach_conv_bn", "-o", str(out)]) == 0
    driver = dash_duo.driver
    driver.get(out.as_uri())
    rows = pass_rows(driver)
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == resolve_pipeline("O2")
    fold = next(r for r in rows if "fold_batchnorm" in r.text)
    cells = [c.text for c in fold.find_elements(By.TAG_NAME, "td")]
    assert cells[2:5] == ["7", "6", "1"] and cells[6].startswith("ok")
    link = fold.find_element(By.TAG_NAME, "a")           # the row links to the pass's section
    anchor = link.get_attribute("href").split("#")[1]
    link.click()
    section = driver.find_element(By.ID, anchor)
    misses = section.find_element(By.CSS_SELECTOR, "table.near-misses").text
    assert "Conv output has another consumer (Relu 'relu_side')" in misses
    assert "relu_side" in misses.splitlines()[-1]         # the blocking consumer column
    width = driver.execute_script(
        "return document.querySelector('#roofline svg.chart').getBoundingClientRect().width")
    assert width > 300                                   # the inline SVG chart is drawn
    driver.save_screenshot(str(tmp_path / "report.png"))


def test_download_report_from_the_app(started):
    dash_duo = started
    dash_duo.find_element("#report-button").click()
    folder = dash_duo.download_path
    wait_until(dash_duo, lambda: any(n.endswith("_report.html") for n in os.listdir(folder)),
               timeout=30, message="no report was downloaded")
    name = next(n for n in os.listdir(folder) if n.endswith("_report.html"))
    assert name == "cnn_bn_report.html"
    dash_duo.driver.get("file://" + os.path.join(folder, name))
    assert "GraphLab report: cnn_bn" in dash_duo.driver.title
    assert len(pass_rows(dash_duo.driver)) == len(resolve_pipeline("O2"))
