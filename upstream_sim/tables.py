"""NEON's field dictionary for the simulated products: tables, their types and every field.

One `Table` per data table (name, description, NEON table type, averaging interval, fields in
file order); each `Field` carries what a NEON variables file lists for it (description, dataType,
units, downloadPkg, pubFormat, primaryKey, categoricalCodeName). A few products are described
field by field after NEON's own tables (soil and air temperature, 2D wind, litterfall); every
other product gets generic tables of the right type, so all data files agree with their
variables file. Nothing here depends on a site or a month: the dictionary is one per product.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import cache

from . import refdata

# NEON's pubFormat strings (as neonutilities reads them to type columns)
TS_SEC = "yyyy-MM-dd'T'HH:mm:ss'Z'(floor)"
TS_MIN = "yyyy-MM-dd'T'HH:mm'Z'(floor)"
DATE = "yyyy-MM-dd"
ASIS = "asIs"
INT = "integer"
VARIABLES_HEADER = ("table", "fieldName", "description", "dataType", "units", "downloadPkg", "pubFormat",
                    "primaryKey", "categoricalCodeName")


def decimals(n: int) -> str:
    return "*." + "#" * n + "(round)"


@dataclass(frozen=True)
class Field:
    name: str
    description: str
    dataType: str  # string | real | integer | dateTime | uri
    units: str = "NA"
    pkg: str = "basic"  # basic | expanded
    pubFormat: str = ASIS
    primaryKey: str = "N"
    lov: str = ""  # categoricalCodeName: the list of values the field is drawn from
    choices: tuple[str, ...] = ()  # the values of that list (written to categoricalCodes)


@dataclass(frozen=True)
class Table:
    name: str
    description: str
    ttype: str  # site-date | site-all | lab-all | lab-current
    tmi: int  # averaging interval in minutes (0 for observational and lab tables)
    fields: tuple[Field, ...]
    lab: str = ""  # lab tables: the laboratory that publishes them (file names carry it)
    optional: bool = False  # observational tables present only in months with such samples

    def columns(self, package: str) -> list[Field]:
        return [f for f in self.fields if package == "expanded" or f.pkg == "basic"]

    @property
    def is_lab(self) -> bool:
        return self.ttype.startswith("lab")


# ------------------------------------------------------------------------------------ sensors
@dataclass(frozen=True)
class SensorVar:
    prefix: str  # soilTemp -> soilTempMean, soilTempMinimum, ...
    label: str  # "soil temperature"
    units: str
    kind: str  # temp | speed | direction
    has_minmax: bool = True


@dataclass(frozen=True)
class SensorSpec:
    variables: tuple[SensorVar, ...]
    points_per_minute: float  # measurements averaged per minute (NumPts = tmi * this)
    layout: str  # soil | tower | tower_below_top | tower_top | default (see DataFiles.positions)
    qf_per_variable: bool = False  # 2D wind: windSpeedFinalQF and windDirFinalQF; else one finalQF


# A month of 1-minute data is ~44,000 rows per position and every listing needs each file's MD5,
# so the volume is kept near what tests can afford: soil has two depths at one plot, 2D wind only
# its speed (not its direction).
SENSORS: dict[str, SensorSpec] = {
    "DP1.00041.001": SensorSpec((SensorVar("soilTemp", "soil temperature", "celsius", "temp"),), 6, "soil"),
    "DP1.00002.001": SensorSpec((SensorVar("tempSingle", "single aspirated air temperature", "celsius", "temp"),),
                                60, "tower_below_top"),
    "DP1.00003.001": SensorSpec((SensorVar("tempTriple", "triple aspirated air temperature", "celsius", "temp"),),
                                60, "tower_top"),
    "DP1.00001.001": SensorSpec((SensorVar("windSpeed", "wind speed", "metersPerSecond", "speed"),), 60, "tower",
                                qf_per_variable=True),
}

QM_TESTS = ("range", "step")


def _time_fields() -> list[Field]:
    return [
        Field("startDateTime", "Date and time at which a sampling is initiated", "dateTime",
              pubFormat=TS_SEC, primaryKey="Y"),
        Field("endDateTime", "Date and time at which a sampling is completed", "dateTime", pubFormat=TS_SEC),
    ]


def _quality_fields(prefix: str, per: str) -> list[Field]:
    """Expanded quality metrics and the final flags: named per variable (2D wind) or once (prefix '')."""
    def nm(s: str) -> str:
        return prefix + s[0].upper() + s[1:] if prefix else s

    out = []
    for test in QM_TESTS:
        for outcome, what in (("Pass", "passed"), ("Fail", "failed"), ("NA", "could not be evaluated by")):
            out.append(Field(nm(f"{test}{outcome}QM"), f"Quality metric detailing the percent of data points that "
                                                        f"{what} the {test} test {per}", "real", "percent",
                             "expanded", decimals(2)))
    for qm, what in (("alpha", "failed at least one quality test"),
                     ("beta", "could not be evaluated by at least one quality test")):
        out.append(Field(nm(f"{qm}QM"), f"Quality metric detailing the percent of data points that {what} {per}",
                         "real", "percent", "expanded", decimals(2)))
    out.append(Field(nm("finalQF"), "Quality flag indicating whether a data product has passed or failed an overall "
                                    "assessment of its quality, 1=fail, 0=pass", "integer", pubFormat=INT))
    out.append(Field(nm("finalQFSciRvw"), "Quality flag indicating whether a data product has passed or failed an "
                                          "overall assessment of its quality, detailed by a science review, "
                                          "1=fail, 0=pass, 2=redacted", "integer", pkg="expanded", pubFormat=INT))
    return out


def sensor_fields(spec: SensorSpec, tmi: int) -> tuple[Field, ...]:
    per = f"over the {tmi} minute averaging interval"
    out = _time_fields()
    for v in spec.variables:
        sq = "degreeSquared" if v.units == "degree" else f"{v.units}Squared" if v.units != "NA" else "NA"
        out.append(Field(f"{v.prefix}Mean", f"Arithmetic mean of {v.label} {per}", "real", v.units,
                         pubFormat=decimals(2)))
        if v.has_minmax:
            out.append(Field(f"{v.prefix}Minimum", f"Minimum {v.label} {per}", "real", v.units,
                             pubFormat=decimals(2)))
            out.append(Field(f"{v.prefix}Maximum", f"Maximum {v.label} {per}", "real", v.units,
                             pubFormat=decimals(2)))
        out.append(Field(f"{v.prefix}Variance", f"Variance in {v.label} {per}", "real", sq, pubFormat=decimals(4)))
        out.append(Field(f"{v.prefix}NumPts", f"Number of points used to calculate the arithmetic mean of {v.label}",
                         "integer", "number", pubFormat=INT))
        out.append(Field(f"{v.prefix}ExpUncert", f"Expanded uncertainty for the mean {v.label}", "real", v.units,
                         pubFormat=decimals(2)))
        out.append(Field(f"{v.prefix}StdErMean", f"Standard error of the mean {v.label}", "real", v.units,
                         pubFormat=decimals(4)))
        if spec.qf_per_variable:
            out += _quality_fields(v.prefix, per)
    if not spec.qf_per_variable:
        out += _quality_fields("", per)
    return tuple(out)


def generic_sensor_spec(table: str) -> SensorSpec:
    prefix = re.sub(r"[^A-Za-z]", "", table.split("_")[0])[:12] or "value"
    prefix = prefix[0].lower() + prefix[1:]
    return SensorSpec((SensorVar(prefix, f"{prefix} measurement", "NA", "generic"),), 1, "default")


# ---------------------------------------------------------------------------- observational
def _common(plot: bool = True) -> list[Field]:
    out = [
        Field("uid", "Unique ID within NEON database; an identifier for the record", "string", primaryKey="Y"),
        Field("namedLocation", "Name of the measurement location in the NEON database", "string"),
        Field("domainID", "Unique identifier of the NEON domain", "string"),
        Field("siteID", "NEON site code", "string"),
    ]
    if plot:
        out.append(Field("plotID", "Plot identifier (NEON site code_XXX)", "string"))
    return out


def _people() -> list[Field]:
    return [
        Field("measuredBy", "An identifier for the technician who measured or collected the data", "string",
              pkg="expanded"),
        Field("recordedBy", "An identifier for the technician who recorded the data", "string", pkg="expanded"),
    ]


REMARKS = Field("remarks", "Technician notes; free text comments accompanying the record", "string")
DATA_QF = Field("dataQF", "Data quality flag", "string", pkg="expanded", lov="dataQF_ltr",
                choices=("legacyData", "dataEnteredLate"))
PLOT_TYPE = Field("plotType", "NEON plot type in which sampling occurred: tower, distributed or gradient", "string",
                  lov="plotType_all", choices=("tower", "distributed"))
LATLON = [
    Field("decimalLatitude", "The geographic latitude (in decimal degrees, WGS84) of the geographic center of the "
                             "reference area", "real", "degree", pubFormat=decimals(6)),
    Field("decimalLongitude", "The geographic longitude (in decimal degrees, WGS84) of the geographic center of the "
                              "reference area", "real", "degree", pubFormat=decimals(6)),
    Field("geodeticDatum", "Model used to measure horizontal position", "string"),
    Field("coordinateUncertainty", "The horizontal distance (in meters) from the given decimalLatitude and "
                                   "decimalLongitude describing the smallest circle containing the whole of the "
                                   "Location. Zero is not a valid value for this term", "real", "meter",
          pubFormat=decimals(2)),
    Field("elevation", "Elevation (in meters) above sea level", "real", "meter", pubFormat=decimals(2)),
    Field("elevationUncertainty", "Uncertainty in elevation values (in meters)", "real", "meter",
          pubFormat=decimals(2)),
]
FUNCTIONAL_GROUPS = ("Leaves", "Needles", "Twigs/branches", "Woody material", "Seeds", "Flowers", "Other", "Mixed")

LITTERFALL: tuple[Table, ...] = (
    Table("ltr_pertrap", "Per trap metadata, including location", "site-all", 0, tuple(
        [*_common(),
            Field("trapID", "Identifier for the litter trap", "string"),
            PLOT_TYPE,
            Field("trapType", "Type of litter trap: elevated or ground", "string", lov="trapType_ltr",
                  choices=("Elevated", "Ground")),
            Field("trapSize", "Area of the litter trap", "real", "squareMeter", pubFormat=decimals(2)),
            *LATLON,
            Field("nlcdClass", "National Land Cover Database Vegetation Type Name", "string",
                  lov="nlcdClass_all", choices=("deciduousForest", "evergreenForest", "mixedForest",
                                                "shrubScrub", "grasslandHerbaceous")),
            Field("date", "Date or date and time the trap was established", "dateTime", pubFormat=TS_MIN),
            REMARKS, *_people(),
        ])),
    Table("ltr_fielddata", "Litter trap collection events: set and collect dates and trap condition", "site-date",
          0, tuple([*_common(),
              Field("trapID", "Identifier for the litter trap", "string"),
              PLOT_TYPE,
              Field("setDate", "Date and time that the trap was set or emptied before the collection", "dateTime",
                    pubFormat=TS_MIN),
              Field("collectDate", "Date and time of the collection", "dateTime", pubFormat=TS_MIN),
              Field("eventID", "An identifier for the set of information associated with the event, which includes "
                               "information about the place and time of the event", "string"),
              Field("trapCondition", "Condition of the litter trap at collection", "string", lov="trapCondition_ltr",
                    choices=("OK - no problems", "Trap damaged", "Trap disturbed", "Trap full")),
              Field("samplingImpractical", "Samples and/or measurements were not collected due to the indicated "
                                           "circumstance", "string", lov="samplingImpractical_ltr",
                    choices=("OK", "Logistical", "High water", "Snow", "Other")),
              REMARKS, *_people(),
          ])),
    Table("ltr_massdata", "Dry mass of litter and fine woody debris components per trap per bout", "site-date", 0,
          tuple([*_common(),
              Field("trapID", "Identifier for the litter trap", "string"),
              PLOT_TYPE,
              Field("setDate", "Date and time that the trap was set or emptied before the collection", "dateTime",
                    pubFormat=TS_MIN),
              Field("collectDate", "Date and time of the collection", "dateTime", pubFormat=TS_MIN),
              Field("ovenStartDate", "Date and time the sample was placed in the oven", "dateTime",
                    pkg="expanded", pubFormat=TS_MIN),
              Field("ovenEndDate", "Date and time the sample was removed from the oven", "dateTime",
                    pkg="expanded", pubFormat=TS_MIN),
              Field("weighDate", "Date that the sample was weighed", "dateTime", pubFormat=DATE),
              Field("massSampleID", "Identifier for the dried and weighed sample", "string"),
              Field("functionalGroup", "Functional group of the litter sample", "string",
                    lov="functionalGroup_ltr", choices=FUNCTIONAL_GROUPS),
              Field("dryMass", "Weight of the dried sample", "real", "gram", pubFormat=decimals(3)),
              Field("qaDryMass", "Indicator of whether the sample was weighed a second time for quality assurance",
                    "string", lov="yesNo", choices=("Y", "N")),
              REMARKS, *_people(), DATA_QF,
          ])),
    Table("ltr_chemistrySubsampling", "Subsampling of litter for chemistry analyses", "site-date", 0, tuple(
        [*_common(),
            Field("collectDate", "Date and time of the collection", "dateTime", pubFormat=TS_MIN),
            Field("processedDate", "Date and time the sample was processed", "dateTime", pubFormat=DATE),
            Field("cnSampleID", "Identifier for the sample sent for carbon and nitrogen analysis", "string"),
            Field("ligninSampleID", "Identifier for the sample sent for lignin analysis", "string"),
            Field("subsampleMass", "Mass of the chemistry subsample", "real", "gram", pubFormat=decimals(3)),
            REMARKS, *_people(),
        ]), optional=True),
    Table("ltr_litterCarbonNitrogen", "Carbon and nitrogen concentrations and stable isotopes in litter",
          "site-date", 0, tuple([*_common(),
              Field("collectDate", "Date and time of the collection", "dateTime", pubFormat=TS_MIN),
              Field("cnSampleID", "Identifier for the sample sent for carbon and nitrogen analysis", "string"),
              Field("d15N", "Nitrogen stable isotope ratio delta15N", "real", "permil", pubFormat=decimals(2)),
              Field("d13C", "Carbon stable isotope ratio delta13C", "real", "permil", pubFormat=decimals(2)),
              Field("nitrogenPercent", "Nitrogen concentration of the sample", "real", "percent",
                    pubFormat=decimals(2)),
              Field("carbonPercent", "Carbon concentration of the sample", "real", "percent", pubFormat=decimals(2)),
              Field("CNratio", "Ratio of carbon to nitrogen", "real", "NA", pubFormat=decimals(1)),
              Field("analysisDate", "Date of the laboratory analysis", "dateTime", pubFormat=DATE),
              Field("laboratoryName", "Name of the laboratory that performed the analysis", "string"),
              REMARKS,
          ]), optional=True),
    Table("ltr_litterLignin", "Lignin and cellulose concentrations in litter", "site-date", 0, tuple(
        [*_common(),
            Field("collectDate", "Date and time of the collection", "dateTime", pubFormat=TS_MIN),
            Field("ligninSampleID", "Identifier for the sample sent for lignin analysis", "string"),
            Field("ligninPercent", "Lignin concentration of the sample", "real", "percent", pubFormat=decimals(2)),
            Field("cellulosePercent", "Cellulose concentration of the sample", "real", "percent",
                  pubFormat=decimals(2)),
            Field("dryMass", "Dry mass of the analysed sample", "real", "gram", pkg="expanded", pubFormat=decimals(4)),
            Field("analysisDate", "Date of the laboratory analysis", "dateTime", pubFormat=DATE),
            Field("laboratoryName", "Name of the laboratory that performed the analysis", "string"),
            REMARKS,
        ]), optional=True),
    Table("ltr_vegetationCover", "Vegetation cover and canopy composition above each litter trap", "site-all", 0,
          tuple([*_common(),
              Field("trapID", "Identifier for the litter trap", "string"),
              Field("date", "Date or date and time of the survey", "dateTime", pubFormat=TS_MIN),
              Field("canopyCover", "Percent canopy cover above the trap", "real", "percent", pubFormat=decimals(1)),
              Field("dominantTaxonID", "Taxon code of the dominant overstory species", "string"),
              REMARKS,
          ])),
)

CN_LAB = "University_of_Wyoming_Stable_Isotope_Facility"
LIGNIN_LAB = "A_and_L_Great_Lakes"


def _lab_fields(analytes: tuple[str, ...]) -> tuple[Field, ...]:
    return (
        Field("uid", "Unique ID within NEON database; an identifier for the record", "string", primaryKey="Y"),
        Field("laboratoryName", "Name of the laboratory that performed the analysis", "string"),
        Field("labSpecificStartDate", "Start date for the period in which the values are valid", "dateTime",
              pubFormat=DATE),
        Field("labSpecificEndDate", "End date for the period in which the values are valid", "dateTime",
              pubFormat=DATE),
        Field("analyte", "Chemical constituent or quantity measured", "string", lov="analyte_lab", choices=analytes),
        Field("analyteUnits", "Units of the analyte values", "string"),
        Field("methodDetectionLimit", "Lowest value that can be distinguished from zero for the analyte", "real",
              "NA", pubFormat=decimals(4)),
        Field("precision", "Long-term precision of repeated measurements of a reference material", "real", "NA",
              pubFormat=decimals(4)),
        Field("accuracy", "Long-term difference between measured and known values of a reference material",
              "real", "NA", pubFormat=decimals(4)),
        # lab files carry no package in their name, so both packages hold the same bytes: no expanded fields
        Field("instrument", "Instrument used for the analysis", "string"),
        REMARKS,
    )


LAB_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "bgc_CNiso_externalSummary": (CN_LAB, ("d15N", "d13C", "nitrogenPercent", "carbonPercent")),
    "lig_externalSummary": (LIGNIN_LAB, ("ligninPercent", "cellulosePercent")),
}
INSTRUMENTS = {CN_LAB: "Costech ECS 4010 elemental analyzer with Thermo Delta V isotope ratio mass spectrometer",
               LIGNIN_LAB: "Ankom A2000 fiber analyzer"}
LAB_NAMES = (CN_LAB, LIGNIN_LAB, "Cornell_Stable_Isotope_Laboratory", "EcoCore_CSU", "Battelle_Applied_Genomics",
             "University_of_Florida_Wetland_Biogeochemistry_Lab", "Kansas_State_Soil_Testing_Lab")


def _lab_table(name: str, desc: str, ttype: str, code: str) -> Table:
    lab, analytes = LAB_TABLES.get(name, (None, ("analyteA", "analyteB", "analyteC")))
    if lab is None:
        lab = LAB_NAMES[sum(map(ord, code + name)) % len(LAB_NAMES)]
    return Table(name, desc, ttype, 0, _lab_fields(analytes), lab=lab)


def _generic_os(name: str, desc: str, ttype: str) -> Table:
    fields = [*_common(),
        Field("collectDate", "Date and time of the collection", "dateTime", pubFormat=TS_MIN),
        Field("sampleID", "Identifier for the sample", "string"),
        Field("measurement", "Value measured for the sample", "real", "NA", pubFormat=decimals(3)),
        Field("sampleCount", "Number of individuals or subsamples in the sample", "integer", "number",
              pubFormat=INT),
        REMARKS, DATA_QF,
    ]
    return Table(name, desc, ttype, 0, tuple(fields))


# ---------------------------------------------------------------------------- the dictionary
SENSOR_POSITIONS_FIELDS: tuple[tuple[str, str, str, str, str], ...] = (
    # name, dataType, units, pubFormat, description (as neonutilities' own sensor_positions definitions)
    ("HOR.VER", "string", "NA", ASIS, "The combined value of the horizontal and vertical location indices "
                                      "specified in each data file name"),
    ("sensorLocationID", "string", "NA", ASIS, "The unique identifier for the location used by NEON for where "
                                               "the sensor was installed."),
    ("sensorLocationDescription", "string", "NA", ASIS, "The description of the location where the sensor was "
                                                        "installed."),
    ("positionStartDateTime", "dateTime", "NA", "yyyy-MM-dd'T'HH:mm:ss'Z'(floor)",
     "The start date and time in UTC for the position information supplied for the location. If the position or "
     "orientation of the location changed over time, additional rows will supply the full history."),
    ("positionEndDateTime", "dateTime", "NA", "yyyy-MM-dd'T'HH:mm:ss'Z'(floor)",
     "The end date and time in UTC for the position information supplied for the location. A blank value "
     "indicates that the position information was still valid for the location at the time of publishing."),
    ("referenceLocationID", "string", "NA", ASIS, "The unique identifier for the reference location from which "
                                                  "the xOffset, yOffset, and zOffset distances are measured."),
    ("referenceLocationIDDescription", "string", "NA", ASIS, "The description of the reference location."),
    ("referenceLocationIDStartDateTime", "dateTime", "NA", "yyyy-MM-dd'T'HH:mm:ss'Z'(floor)",
     "The start date and time in UTC for the position information supplied for the reference location."),
    ("referenceLocationIDEndDateTime", "dateTime", "NA", "yyyy-MM-dd'T'HH:mm:ss'Z'(floor)",
     "The end date and time in UTC for the position information supplied for the reference location."),
    ("xOffset", "real", "meter", "*.##(round)", "The offset along the x-axis of the local coordinate frame, in "
                                                "meters, from the reference location to the sensor."),
    ("yOffset", "real", "meter", "*.##(round)", "The offset along the y-axis of the local coordinate frame, in "
                                                "meters, from the reference location to the sensor."),
    ("zOffset", "real", "meter", "*.##(round)", "The offset along the z-axis of the local coordinate frame, in "
                                                "meters, from the reference location to the sensor; positive "
                                                "values are above the reference location."),
    ("pitch", "real", "degrees", "*.##(round)", "The elevation angle, in degrees, at which the sensor is oriented "
                                                "relative to the horizontal plane."),
    ("roll", "real", "degrees", "*.##(round)", "The roll angle at which the sensor is oriented, in degrees, about "
                                               "the longitudinal axis of the sensor"),
    ("azimuth", "real", "degrees", "*.##(round)", "The azimuth or yaw angle, in degrees, at which the sensor is "
                                                  "facing relative to true north."),
    ("locationReferenceLatitude", "real", "degrees", "*.######(round)",
     "The geographic latitude, in degrees, of the reference location."),
    ("locationReferenceLongitude", "real", "degrees", "*.######(round)",
     "The geographic longitude, in degrees, of the reference location."),
    ("locationReferenceElevation", "real", "meter", "*.##(round)", "The elevation, in meters, above mean sea "
                                                                   "level."),
    ("eastOffset", "real", "meter", "*.##(round)", "The offset along the cardinal east direction, in meters, from "
                                                   "the reference location to the sensor."),
    ("northOffset", "real", "meter", "*.##(round)", "The offset along the cardinal north (true) direction, in "
                                                    "meters, from the reference location to the sensor."),
    ("xAzimuth", "real", "degrees", "*.##(round)", "The azimuth, in degrees, of the local x-axis with respect to "
                                                   "true north."),
    ("yAzimuth", "real", "degrees", "*.##(round)", "The azimuth, in degrees, of the local y-axis with respect to "
                                                   "true north."),
)
SENSOR_POSITIONS = Table("sensor_positions", "Sensor locations, offsets and the periods they apply to", "site-all",
                         0, tuple(Field(n, d, t, u, pubFormat=p) for n, t, u, p, d in SENSOR_POSITIONS_FIELDS))

SRF_FIELDS: tuple[Field, ...] = (
    Field("srfID", "Record identifier for science review flag", "integer", pubFormat=INT, primaryKey="Y"),
    Field("startDateTime", "Date and time at which the flagged period begins", "dateTime", pubFormat=TS_SEC),
    Field("endDateTime", "Date and time at which the flagged period ends", "dateTime", pubFormat=TS_SEC),
    Field("domainID", "Unique identifier of the NEON domain", "string"),
    Field("siteID", "NEON site code", "string"),
    Field("dpID", "Data product identifier in the form of DPL.DPNUM.REV", "string"),
    Field("fieldName", "Parameter name in data file", "string"),
    Field("horizontalPosition", "Index of horizontal location at a NEON site", "string"),
    Field("verticalPosition", "Index of vertical location at a NEON site", "string"),
    Field("srfValue", "Value of the science review quality flag (0=previous quality concern resolved; 1=fail but "
                      "data retained; 2=fail and data redacted)", "integer", pubFormat=INT),
    Field("srfValueJustification", "Justification for srfValue", "string"),
    Field("createDateTime", "The date and time the science review flag was first generated", "dateTime",
          pubFormat=TS_SEC),
    Field("lastUpdateDateTime", "The date and time the science review flag was last updated", "dateTime",
          pubFormat=TS_SEC),
)
SCIENCE_REVIEW_FLAGS = Table("science_review_flags", "Science review flags", "site-date", 0, SRF_FIELDS)


def is_sensor_product(team: str) -> bool:
    return team in ("TIS", "AIS")


@cache
def product_tables(code: str, team: str, product_name: str) -> tuple[Table, ...]:
    """The data tables of one product, in NEON's order (the variables file lists them so)."""
    rows = refdata.table_types().get(code)
    if not rows:
        base = re.sub(r"[^A-Za-z0-9]+", "_", product_name).strip("_")[:24]
        if is_sensor_product(team):
            rows = [{"tableName": f"{base}_30min", "tableDesc": product_name, "tableType": "site-date",
                     "tableTMI": "30"}]
        else:
            rows = [{"tableName": base if "_" in base else base + "_data", "tableDesc": product_name,
                     "tableType": "site-date", "tableTMI": "0"}]
    if code == "DP1.10033.001":
        by_name = {t.name: t for t in LITTERFALL}
    else:
        by_name = {}
    out = []
    for row in rows:
        name, desc, ttype = row["tableName"], row.get("tableDesc") or row["tableName"], row["tableType"]
        tmi = int(row.get("tableTMI") or 0)
        if name in by_name:
            out.append(by_name[name])
        elif ttype.startswith("lab"):
            out.append(_lab_table(name, desc, ttype, code))
        elif is_sensor_product(team) and tmi:
            spec = SENSORS.get(code) or generic_sensor_spec(name)
            out.append(Table(name, desc, ttype, tmi, sensor_fields(spec, tmi)))
        else:
            out.append(_generic_os(name, desc, ttype))
    return tuple(out)


def sensor_spec(code: str, table: str) -> SensorSpec:
    return SENSORS.get(code) or generic_sensor_spec(table)


def dictionary(code: str, team: str, product_name: str) -> tuple[Table, ...]:
    """Every table a variables file of the product describes, metadata tables included."""
    tables = product_tables(code, team, product_name)
    extra = (SENSOR_POSITIONS,) if is_sensor_product(team) else ()
    return tables + extra + (SCIENCE_REVIEW_FLAGS,)


def variables_csv(code: str, team: str, product_name: str, note: str = "") -> bytes:
    """NEON's variables file for a product: one row per table field, every value quoted."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(VARIABLES_HEADER)
    first = True
    for t in dictionary(code, team, product_name):
        for f in t.fields:
            desc = f.description + (f" {note}" if note and first else "")
            first = False
            w.writerow((t.name, f.name, desc, f.dataType, f.units, f.pkg, f.pubFormat, f.primaryKey, f.lov))
    return buf.getvalue().encode()


def categorical_codes(tables: tuple[Table, ...]) -> list[tuple[str, str]]:
    """(list name, code) of every categorical field of the tables, once each."""
    seen: dict[str, tuple[str, ...]] = {}
    for t in tables:
        for f in t.fields:
            if f.lov and f.lov not in seen:
                seen[f.lov] = f.choices
    return [(lov, c) for lov, codes in seen.items() for c in codes]
